"""`make demo`: start the local stack and show journals working end to end.

Each step runs the real `gazctl` command and prints it first, so the output
doubles as a tutorial. The stack is left running for you to explore.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "journals.yaml"


def gazctl(*args: str, stdin: bytes | None = None, head: int = 0) -> bytes:
    """Run gazctl, echoing the command line and its output (the first `head` lines if set)."""
    print(f"\n$ gazctl {' '.join(args)}", flush=True)
    proc = subprocess.run([sys.executable, "-m", "gazctl.main", *args], input=stdin,
                          capture_output=True, check=False)
    text = proc.stdout.decode(errors="replace")
    lines = text.splitlines(keepends=True)
    if head and len(lines) > head:
        text = "".join(lines[:head]) + f"... ({len(lines) - head} more lines)\n"
    sys.stdout.write(text)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if proc.returncode != 0:
        raise SystemExit(f"demo step failed: gazctl {' '.join(args)} (exit {proc.returncode})")
    return proc.stdout


def clicks(batch: int, n: int = 40) -> bytes:
    rows = [{"batch": batch, "seq": i, "user": f"user-{(batch * 7 + i) % 13}",
             "page": f"/products/{i % 5}"} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def main() -> None:
    gazctl("local", "up")
    gazctl("journals", "apply", "--specs", str(EXAMPLES))
    gazctl("journals", "list", "-p", "--rf", "-L", "topic", "-L", "content-type")
    for batch in range(3):
        gazctl("journals", "append", "-l", "name=examples/clicks", stdin=clicks(batch))
    gazctl("journals", "append", "-l", "name=examples/greetings",
           stdin=b"hello, gazette\n")
    out = gazctl("journals", "read", "-l", "topic=clicks", head=5)
    print(f"(read {len(out.splitlines())} records back, in append order)")
    print("\nwaiting for the first fragment to be persisted and listed...", flush=True)
    time.sleep(3)
    gazctl("journals", "fragments", "-l", "name=examples/clicks")
    gazctl("local", "status")
    print("\nThe stack keeps running. Try `gazctl journals read -l topic=clicks -b` in one "
          "terminal and appends in another;\n`gazctl local down` stops it.")


if __name__ == "__main__":
    main()
