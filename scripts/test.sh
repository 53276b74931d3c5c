#!/usr/bin/env bash
# The whole test suite. Installs what the tests need first, into .venv, once: moto (the AWS API emulator
# the AWS tests start on 127.0.0.1) and helm-python-sdk (Helm's own Go SDK, which the chart tests render
# with; no helm binary), and Debian's chromium (the `simulate --report` test screenshots the page headless;
# installed with apt-get when /usr/bin/chromium is missing, which needs root as in CI). protoc comes from a
# crate; nothing else is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
MOTO_VERSION=5.2.5
if ! .venv/bin/python -c "import moto, flask" 2>/dev/null \
    || [ "$(.venv/bin/python -c 'import moto; print(moto.__version__)')" != "$MOTO_VERSION" ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
fi
HELM_SDK_VERSION=0.2.2
if ! .venv/bin/python -c "import helm_python" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check "helm-python-sdk==$HELM_SDK_VERSION"
fi
if [ ! -x /usr/bin/chromium ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium >/dev/null
fi
export FERROSCALE_CHROMIUM=/usr/bin/chromium
export FERROSCALE_MOTO_SERVER="$PWD/.venv/bin/moto_server"
export FERROSCALE_HELM_PYTHON="$PWD/.venv/bin/python"
cargo test --locked --workspace "$@"
