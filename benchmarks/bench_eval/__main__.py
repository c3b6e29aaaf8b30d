"""`python -m benchmarks.bench_eval`: the levels (or a mode); `--child` runs one level's eval."""

import sys

from benchmarks.bench_eval import child, main

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], float(sys.argv[6]))
    else:
        main()
