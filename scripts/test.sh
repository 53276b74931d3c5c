#!/usr/bin/env bash
# The whole test suite. Installs what the tests need first: moto (the AWS API emulator the AWS tests
# start on 127.0.0.1) into .venv, once. protoc comes from a crate; nothing else is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
MOTO_VERSION=5.2.5
if ! .venv/bin/python -c "import moto, flask" 2>/dev/null \
    || [ "$(.venv/bin/python -c 'import moto; print(moto.__version__)')" != "$MOTO_VERSION" ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
fi
export FERROSCALE_MOTO_SERVER="$PWD/.venv/bin/moto_server"
cargo test --locked "$@"
