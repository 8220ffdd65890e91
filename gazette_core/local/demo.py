"""`make demo`: start the local stack and show journals, then consumers, working end to end.

Each step runs the real `gazctl` (or example) command and prints it first, so
the output doubles as a tutorial. The consumer part runs the stream_sum
example: two consumer processes sum streams of chunks exactly once, and the
chunker verifies every sum. The stack is left running for you to explore. When the
stack has an S3 emulator (`gazctl local up --s3` earlier, or `--s3` here),
the example journals are stored in its bucket instead of under the file root.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from gazette_core.local import s3 as local_s3
from gazette_core.local import stack as local_stack

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "journals.yaml"
STREAM_SUM = "examples/stream_sum"


def gazctl(*args: str, stdin: bytes | None = None, head: int = 0) -> bytes:
    """Run gazctl, echoing the command line and its output (the first `head` lines if set)."""
    return run(["gazctl", *args], ["-m", "gazctl.main", *args], stdin, head)


def run(shown: list[str], argv: list[str], stdin: bytes | None = None, head: int = 0) -> bytes:
    """Run `python argv`, shown as `shown`, echoing its output (the first `head` lines)."""
    print(f"\n$ {' '.join(shown)}", flush=True)
    proc = subprocess.run([sys.executable, *argv], input=stdin, cwd=ROOT,
                          capture_output=True, check=False)
    text = proc.stdout.decode(errors="replace")
    lines = text.splitlines(keepends=True)
    if head and len(lines) > head:
        text = "".join(lines[:head]) + f"... ({len(lines) - head} more lines)\n"
    sys.stdout.write(text)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if proc.returncode != 0:
        raise SystemExit(f"demo step failed: {' '.join(shown)} (exit {proc.returncode})")
    return proc.stdout


def clicks(batch: int, n: int = 40) -> bytes:
    rows = [{"batch": batch, "seq": i, "user": f"user-{(batch * 7 + i) % 13}",
             "page": f"/products/{i % 5}"} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def apply_examples() -> None:
    """Apply the example journals, on the stack's S3 bucket when it has one."""
    stack = local_stack.Stack.load(local_stack.DEFAULT_DIR)
    store = stack.s3_store if stack is not None else None
    if store is None:
        gazctl("journals", "apply", "--specs", str(EXAMPLES))
        return
    gazctl("local", "env")
    print(f"\n(the examples, with their store set to $GAZETTE_S3_STORE: {store})")
    specs = EXAMPLES.read_text().replace("    - file:///\n", f"    - {json.dumps(store)}\n")
    gazctl("journals", "apply", stdin=specs.encode())


def list_bucket() -> None:
    """Print the objects of the stack's S3 bucket, if it has one."""
    stack = local_stack.Stack.load(local_stack.DEFAULT_DIR)
    if stack is None or stack.s3 is None:
        return
    listed = local_s3.client(stack.s3.endpoint).list_objects_v2(Bucket=local_s3.BUCKET)
    print(f"\nobjects in s3://{local_s3.BUCKET}/ (fragments persist once they roll or the "
          "brokers stop):")
    for obj in listed.get("Contents", ()):
        print(f"  {obj['Key']}  {obj['Size']} bytes")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    gazctl("local", "up", *(["--s3"] if "--s3" in args else []))
    apply_examples()
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
    list_bucket()
    consumers()
    gazctl("local", "status")
    print("\nThe stack keeps running. Try `gazctl journals read -l topic=clicks -b` in one "
          "terminal and appends in another,\nor kill a consumer (kill -9 PID) while "
          "`python -m examples.stream_sum.chunker` runs;\n`gazctl local down` stops it all.")


def consumers() -> None:
    """Run the stream_sum example: consumers sum streams exactly once, the chunker checks."""
    print("\nConsumers: two processes run examples.stream_sum:Summer, 8 shards with a hot "
          "standby each.", flush=True)
    gazctl("local", "up", "--consumers", "2", "--app", "examples.stream_sum:Summer")
    gazctl("journals", "apply", "--specs", f"{STREAM_SUM}/journals.yaml")
    gazctl("shards", "apply", "--specs", f"{STREAM_SUM}/shards.yaml")
    run(["python", "-m", "examples.stream_sum.chunker", "--streams", "200"],
        ["-m", "examples.stream_sum.chunker", "--streams", "200"])
    gazctl("shards", "list", "-p", "-r", "--lag")


if __name__ == "__main__":
    main()
