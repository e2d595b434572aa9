"""The `math` verifier (final-answer equivalence under Referee's math policy).

Private modules, in pipeline order: `_verifier` (the verifier, driving the rest), `_extract`
(final answer, retractions, hedges), `_text` (spelling clean-up), `_lexer` (whitelist
tokenizer), `_parser` (grammar -> tuple tree, node shapes in `_tree`; which `|` opens and
which closes in `_bars`; sums and products with bounds in `_bigops`), `_values` (what the answer denotes, with `_labels`, `_inequalities` and
`_matrices`), `_numeric` (exact / bounded numeric equality, over `_exact` and `_evaluate`),
`_compare` (policy rules), `_format` (bounded rendering for details).
"""

from referee.verifiers.base import Verifier
from referee.verifiers.math._verifier import MathOptions, MathReference, MathVerifier

__all__ = ["VERIFIERS", "MathOptions", "MathReference", "MathVerifier"]

VERIFIERS: list[type[Verifier]] = [MathVerifier]
