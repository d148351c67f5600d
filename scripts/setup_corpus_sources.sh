#!/usr/bin/env bash
# Install the Debian packages that scripts/build_pretraining_corpus.py reads as
# English prose (documentation, manuals, the King James Bible, dictionaries).
# Needs root and apt-get; runs `apt-get update` once, then installs without
# recommends.  Usage: scripts/setup_corpus_sources.sh [-h] [PACKAGE...]
# With no arguments it installs every package the corpus script knows about.
set -euo pipefail

DEFAULT_PACKAGES=(
    python3.11-doc perl-doc postgresql-doc-15 git-doc debian-reference-en
    linux-doc-6.1 manpages manpages-dev bible-kjv-text
    gimp-help-en python-django-doc debian-handbook sqlite3-doc gnome-user-docs
    openjdk-17-doc rust-doc dict-gcide dict-foldoc bible-kjv
    python-pandas-doc python-sqlalchemy-doc python-sklearn-doc python-sympy-doc
    libreoffice-help-en-us octave-doc python-scipy-doc python-statsmodels-doc python-astropy-doc
    apache2-doc debian-policy developers-reference lilypond-doc-html zsh-doc tcl8.6-doc r-doc-html
    maxima-doc fortunes dict-jargon dict-devil vim-runtime
)

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    echo "Default packages: ${DEFAULT_PACKAGES[*]}"
    exit 0
fi
if [[ "$(id -u)" != "0" ]]; then
    echo "setup_corpus_sources.sh: must run as root (apt-get install)" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null; then
    echo "setup_corpus_sources.sh: apt-get not found (Debian/Ubuntu only)" >&2
    exit 1
fi
if [[ $# -gt 0 ]]; then
    PACKAGES=("$@")
else
    PACKAGES=("${DEFAULT_PACKAGES[@]}")
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${PACKAGES[@]}"
echo "setup_corpus_sources.sh: installed ${PACKAGES[*]}"
