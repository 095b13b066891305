#!/usr/bin/env bash
# Install what the SPARQL server tests need on a Debian machine, idempotently:
#   - Virtuoso 7 (virtuoso-t, isql-vt) from Debian's virtuoso-opensource package, non-interactive.
#   - The Oxigraph server CLI comes from PyPI (`oxigraph`, in kg-agents[server]); nothing to do here.
# kg_agents.kg.servers.VirtuosoServer runs its own virtuoso-t with its own ini, directories and free
# 127.0.0.1 ports, so the package's system service is neither needed nor started.
# Usage: scripts/install_virtuoso.sh   (as root, or with sudo available)
set -euo pipefail

if command -v virtuoso-t >/dev/null 2>&1 && command -v isql-vt >/dev/null 2>&1; then
  echo "virtuoso already installed: $(command -v virtuoso-t)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_virtuoso.sh: needs root (or sudo) to apt-get install virtuoso-opensource" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_virtuoso.sh: apt-get not found; install Virtuoso 7 (virtuoso-t, isql-vt) by hand" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# The package asks for the dba password of its system database; preseed it so nothing prompts.
# (Our test servers create their own databases and never use the system one.)
PW="${VIRTUOSO_DBA_PASSWORD:-dba}"
printf '%s\n' \
  "virtuoso-opensource-7 virtuoso-opensource-7/dba-password password ${PW}" \
  "virtuoso-opensource-7 virtuoso-opensource-7/dba-password-again password ${PW}" \
  | $SUDO debconf-set-selections

# Do not let package scripts start services (no-op where there is no init system).
POLICY=/usr/sbin/policy-rc.d
CREATED_POLICY=0
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod +x "$POLICY"
  CREATED_POLICY=1
fi
cleanup() { if [ "$CREATED_POLICY" = 1 ]; then $SUDO rm -f "$POLICY"; fi; }
trap cleanup EXIT

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends virtuoso-opensource

# If a system service was started anyway (it listens on 1111/8890), stop and disable it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet virtuoso-opensource-7 2>/dev/null; then
  $SUDO systemctl disable --now virtuoso-opensource-7 || true
elif [ -x /etc/init.d/virtuoso-opensource-7 ]; then
  $SUDO /etc/init.d/virtuoso-opensource-7 stop >/dev/null 2>&1 || true
fi

command -v virtuoso-t >/dev/null && command -v isql-vt >/dev/null
echo "virtuoso installed: $(virtuoso-t +? 2>&1 | head -n 2 | tail -n 1 || true)"
