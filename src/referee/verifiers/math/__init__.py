"""The `math` verifier (final-answer equivalence under Referee's math policy).

Private modules, in pipeline order: `_verifier` (the verifier, driving the rest; multiple-choice
letters in `_choices`), `_extract` (final answer, retractions, hedges; what a concluding
sentence states in `_prose`), `_text` (spelling clean-up), `_lexer` (whitelist tokenizer over
the vocabulary of `_tokens`; runs of letters in `_words`), `_bars` (which `|` opens, which
closes), `_parser` (grammar -> tuple tree over the reading position of `_cursor`; node shapes
and builders in `_tree`; context-dependent readings after it in `_rewrite`, sums and products
with bounds written out in `_bigops`), `_values` (what the answer denotes, with `_labels`,
`_inequalities`, `_matrices` and `_sets`), `_numeric` (exact / bounded numeric equality, over
`_exact` and `_evaluate`), `_compare` (policy rules), `_format` (bounded rendering for
details). They import each other without a cycle (`tests/verifiers/math/test_math_modules.py`).
"""

from referee.verifiers.base import Verifier
from referee.verifiers.math._verifier import MathOptions, MathReference, MathVerifier

__all__ = ["VERIFIERS", "MathOptions", "MathReference", "MathVerifier"]

VERIFIERS: list[type[Verifier]] = [MathVerifier]
