"""Function tests of C++, Java and Go programs (referee.sandbox.typed_harness) in the Docker
sandbox: the same LeetCode-style problem solved in each language's idiom, judged right, wrong,
throwing, with a signature the data does not fit, and with types the harness must convert
(nested lists, maps, floats, strings, several results)."""

from __future__ import annotations

from typing import Any

import pytest

from referee.sandbox.pool import SandboxPool
from tests.sandbox.test_code_humaneval_mbpp import _judge

pytestmark = pytest.mark.docker

TWO_SUM_TESTS = [
    {"fn_name": "twoSum", "args": [[2, 7, 11, 15], 9], "expected": [0, 1]},
    {"fn_name": "twoSum", "args": [[3, 2, 4], 6], "expected": [1, 2]},
    {"fn_name": "twoSum", "args": [[3, 3], 6], "expected": [0, 1]},
]

CPP_RIGHT = """```cpp
#include <bits/stdc++.h>
using namespace std;

class Solution {
public:
    vector<int> twoSum(vector<int>& nums, int target) {
        unordered_map<int, int> seen;
        for (int i = 0; i < (int)nums.size(); ++i) {
            auto it = seen.find(target - nums[i]);
            if (it != seen.end()) return {it->second, i};
            seen[nums[i]] = i;
        }
        return {};
    }
};

int main() { return 0; }  // a local test main: renamed, unused
```"""
CPP_WRONG = CPP_RIGHT.replace("return {it->second, i};", "return {i, it->second};")
CPP_THROWS = CPP_RIGHT.replace(
    "unordered_map<int, int> seen;",
    'if (target) throw runtime_error("no");\n        unordered_map<int, int> seen;',
)

JAVA_RIGHT = """```java
import java.util.*;

public class Solution {
    public int[] twoSum(int[] nums, int target) {
        Map<Integer, Integer> seen = new HashMap<>();
        for (int i = 0; i < nums.length; i++) {
            Integer j = seen.get(target - nums[i]);
            if (j != null) return new int[] {j, i};
            seen.put(nums[i], i);
        }
        return new int[0];
    }
}
```"""
JAVA_WRONG = JAVA_RIGHT.replace("new int[] {j, i}", "new int[] {i, j}")
JAVA_THROWS = JAVA_RIGHT.replace(
    "Map<Integer, Integer> seen",
    'if (true) throw new IllegalStateException("no");\n        Map<Integer, Integer> seen',
)

GO_RIGHT = """```go
package main

func twoSum(nums []int, target int) []int {
	seen := map[int]int{}
	for i, n := range nums {
		if j, ok := seen[target-n]; ok {
			return []int{j, i}
		}
		seen[n] = i
	}
	return nil
}
```"""
GO_WRONG = GO_RIGHT.replace("return []int{j, i}", "return []int{i, j}")
GO_THROWS = GO_RIGHT.replace("seen := map[int]int{}", 'panic("no")\n\tseen := map[int]int{}')


RUST_RIGHT = """```rust
use std::collections::HashMap;

impl Solution {
    pub fn two_sum(nums: Vec<i32>, target: i32) -> Vec<i32> {
        let mut seen: HashMap<i32, i32> = HashMap::new();
        for (i, &n) in nums.iter().enumerate() {
            if let Some(&j) = seen.get(&(target - n)) {
                return vec![j, i as i32];
            }
            seen.insert(n, i as i32);
        }
        vec![]
    }
}
```"""
RUST_WRONG = RUST_RIGHT.replace("vec![j, i as i32]", "vec![i as i32, j]")
RUST_THROWS = RUST_RIGHT.replace("let mut seen", 'assert!(target < 0, "no");\n        let mut seen')
RUST_TESTS = [{**t, "fn_name": "two_sum"} for t in TWO_SUM_TESTS]


def reference(language: str, tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"language": language, "test_format": "function", "tests": tests}


@pytest.mark.parametrize(
    ("language", "right", "wrong", "throws"),
    [
        ("cpp", CPP_RIGHT, CPP_WRONG, CPP_THROWS),
        ("java", JAVA_RIGHT, JAVA_WRONG, JAVA_THROWS),
        ("go", GO_RIGHT, GO_WRONG, GO_THROWS),
        ("rust", RUST_RIGHT, RUST_WRONG, RUST_THROWS),
    ],
)
async def test_two_sum_in_each_typed_language(
    sandbox_pool: SandboxPool, language: str, right: str, wrong: str, throws: str
) -> None:
    tests = RUST_TESTS if language == "rust" else TWO_SUM_TESTS
    good, bad, thrown = await _judge(sandbox_pool, [right, wrong, throws], reference(language, tests))
    assert (good.score, good.details["passed"], good.details["total"]) == (1.0, 3, 3), good.details
    assert (bad.score, bad.details["verdict"]) == (0.0, "wrong_answer"), bad.details
    assert (bad.details["tests"][0]["reason"] or "").startswith("returned [1, 0]"), bad.details
    assert (thrown.score, thrown.details["verdict"]) == (0.0, "runtime_error"), thrown.details


async def test_arguments_that_do_not_fit_the_signature_are_wrong_answers(sandbox_pool: SandboxPool) -> None:
    """A float for an `int` parameter, too few arguments: the test's wrong answer, saying why."""
    tests = [
        {"fn_name": "twoSum", "args": [[2.5, 7], 9], "expected": [0, 1]},
        {"fn_name": "twoSum", "args": [[2, 7]], "expected": [0, 1]},
    ]
    for language, program in (
        ("cpp", CPP_RIGHT),
        ("java", JAVA_RIGHT),
        ("go", GO_RIGHT),
        ("rust", RUST_RIGHT),
    ):
        calls = [{**t, "fn_name": "two_sum"} for t in tests] if language == "rust" else tests
        (check,) = await _judge(sandbox_pool, [program], reference(language, calls))
        assert check.score == 0.0 and check.details["verdict"] == "wrong_answer", (language, check.details)
        reasons = [t["reason"] for t in check.details["tests"]]
        assert all("not plain JSON" in (r or "") for r in reasons), (language, reasons)


CPP_TYPES = """```cpp
#include <bits/stdc++.h>
using namespace std;

map<string, int> counts(const string& s) {
    map<string, int> m;
    for (char c : s) m[string(1, c)]++;
    return m;
}
vector<vector<int>> transpose(vector<vector<int>> g) {
    vector<vector<int>> t(g[0].size(), vector<int>(g.size()));
    for (size_t i = 0; i < g.size(); ++i)
        for (size_t j = 0; j < g[0].size(); ++j) t[j][i] = g[i][j];
    return t;
}
double mean(vector<double> v) { return accumulate(v.begin(), v.end(), 0.0) / v.size(); }
pair<long long, bool> big(long long a) { return {a * 3, a > 0}; }
```"""
JAVA_TYPES = """```java
import java.util.*;

class Solution {
    static Map<String, Integer> counts(String s) {
        Map<String, Integer> m = new TreeMap<>();
        for (char c : s.toCharArray()) m.merge(String.valueOf(c), 1, Integer::sum);
        return m;
    }
    List<List<Integer>> transpose(List<List<Integer>> g) {
        List<List<Integer>> t = new ArrayList<>();
        for (int j = 0; j < g.get(0).size(); j++) {
            List<Integer> row = new ArrayList<>();
            for (List<Integer> r : g) row.add(r.get(j));
            t.add(row);
        }
        return t;
    }
    double mean(double[] v) { double s = 0; for (double x : v) s += x; return s / v.length; }
    long[] big(long a) { return new long[] {a * 3, a > 0 ? 1 : 0}; }
}
```"""
GO_TYPES = """```go
package solution

func counts(s string) map[string]int {
	m := map[string]int{}
	for _, c := range s {
		m[string(c)]++
	}
	return m
}

func transpose(g [][]int) [][]int {
	t := make([][]int, len(g[0]))
	for j := range t {
		for i := range g {
			t[j] = append(t[j], g[i][j])
		}
	}
	return t
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func big(a int64) (int64, bool) { return a * 3, a > 0 }
```"""


RUST_TYPES = """```rust
use std::collections::BTreeMap;

fn counts(s: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for c in s.chars() {
        *m.entry(c.to_string()).or_insert(0) += 1;
    }
    m
}

fn transpose(g: Vec<Vec<i32>>) -> Vec<Vec<i32>> {
    (0..g[0].len()).map(|j| g.iter().map(|r| r[j]).collect()).collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn big(a: i64) -> (i64, bool) {
    (a * 3, a > 0)
}

fn main() {}
```"""


@pytest.mark.parametrize(
    ("language", "program", "big"),
    [
        ("cpp", CPP_TYPES, [9_000_000_000, True]),
        ("java", JAVA_TYPES, [9_000_000_000, 1]),
        ("go", GO_TYPES, [9_000_000_000, True]),
        ("rust", RUST_TYPES, [9_000_000_000, True]),
    ],
)
async def test_values_are_converted_both_ways(
    sandbox_pool: SandboxPool, language: str, program: str, big: list[Any]
) -> None:
    tests = [
        {"fn_name": "counts", "args": ["abca"], "expected": {"a": 2, "b": 1, "c": 1}},
        {"fn_name": "transpose", "args": [[[1, 2, 3], [4, 5, 6]]], "expected": [[1, 4], [2, 5], [3, 6]]},
        {"fn_name": "mean", "args": [[1, 2.5, 3]], "expected": 2.1666666666666665},
        {"fn_name": "big", "args": [3_000_000_000], "expected": big},
    ]
    (check,) = await _judge(sandbox_pool, [program], reference(language, tests))
    assert check.score == 1.0, check.details
