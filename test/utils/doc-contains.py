#!/usr/bin/env python3
"""doc-contains.py DOC: succeeds when the text on stdin appears verbatim in DOC.

Used by lit tests to keep the generated tables (`mpc ops --markdown`,
`mpc passes --markdown`) and the committed docs in step: a doc that drifts
from the registry fails the test, with the expected block printed.
"""
import sys

doc_path = sys.argv[1]
expected = sys.stdin.read()
with open(doc_path, encoding="utf-8") as f:
    doc = f.read()
if expected.strip() and expected in doc:
    sys.exit(0)
sys.stderr.write("%s does not contain the generated block; regenerate it. Expected:\n%s"
                 % (doc_path, expected))
sys.exit(1)
