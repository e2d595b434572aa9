"""What runs inside the sandbox container: the files of this folder, and nothing else (this
`__init__` aside: only the host's imports need it).

They are copied into the image as `/opt/referee/<name>` (image.IN_IMAGE_FILES, part of
the image's recipe hash) and run there as scripts of the image's own Python 3.11, stdlib only:
the image has no `referee` package. On the host they are imported only by the tests (and
`tagged`, which the host's judges share); a sibling is imported package-relative on the host and
from the script's own folder in the image.

- supervisor.py    PID 1 of every container: runs each program's processes under a fresh uid,
                   scrubs between tests and programs (docs/security.md)
- kernel_stats.py  what the supervisor reads of the kernel: cgroup memory, CPU and OOM kills,
                   the tasks' run-queue waits (a test's own time vs the node's load)
- zygote.py        the warm Python template every Python test is forked from
- call_harness.py  runs ONE `function` or `assert` test of a Python program: calls the program
                   and returns its values, which the host judges (call_harness.js: `function`
                   tests of a JavaScript program)
- script_tester.py runs ONE `script` test: trusted test code in its own process, the program in
                   another
- tagged.py        type-tagged values decoded into plain Python (the host's judges and the tester)
- checker_runner.py a problem's checker program: compiled before the candidate, run after each
                   test as a uid of its own on files the candidate cannot touch (docs/security.md)
- testlib/         testlib.h (vendored, MIT; its README says from where) for C++ checkers

Each test format has a host half that plans and judges it and an in-container half that runs it:

| format   | host (plans, judges)                | in the container (runs)               |
|----------|-------------------------------------|---------------------------------------|
| stdio    | judge.compare_stdio                 | supervisor.py (the program itself)    |
| + checker| checker_format.checker_outcome      | checker_runner.py (after each test)   |
| function | judge.values_equal                  | call_harness.py, call_harness.js      |
| assert   | assert_format.py (+ assert_eval.py) | call_harness.py (the program's calls) |
| script   | script_format.py                    | script_tester.py                      |
"""
