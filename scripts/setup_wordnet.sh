#!/usr/bin/env bash
# Make WordNet 3.0 available to nltk offline, for METEOR (unilm_fairseq.scoring.metrics.meteor).
#   bash scripts/setup_wordnet.sh              # into .venv/nltk_data (found by the venv's nltk)
#   bash scripts/setup_wordnet.sh DIR          # into DIR; then export NLTK_DATA=DIR
#
# nltk's WordNet reader wants the WordNet 3.0 database files in <nltk_data>/corpora/wordnet/.
# Debian's wordnet-base (data.*, index.*, *.exc, cntlist.rev) and wordnet-sense-index (index.sense)
# packages carry them, but not the `lexnames` file nltk also reads; we write that one ourselves.
# Safe to re-run. Where the packages cannot be installed (no apt-get, not root), set WORDNET_DIR to a
# folder with the WordNet 3.0 dict files, or run `python -m nltk.downloader -d DIR wordnet` with network.
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;; esac  # usage, before any work
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
TARGET=${1:-$VENV/nltk_data}
WORDNET_DIR=${WORDNET_DIR:-/usr/share/wordnet}
PACKAGES=(wordnet-base wordnet-sense-index)
# the files nltk's WordNetCorpusReader opens (its _FILES), except lexnames, which we write
DB_FILES=(cntlist.rev index.sense index.adj index.adv index.noun index.verb
  data.adj data.adv data.noun data.verb adj.exc adv.exc noun.exc verb.exc)

say() { printf '[wordnet] %s\n' "$*"; }

missing_files() {
  local f
  for f in "${DB_FILES[@]}"; do [ -s "$WORDNET_DIR/$f" ] || printf '%s ' "$f"; done
}

if [ -n "$(missing_files)" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing Debian packages: ${PACKAGES[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
  else
    say "WordNet database files missing in $WORDNET_DIR: $(missing_files)"
    say "install them as root:  apt-get install -y --no-install-recommends ${PACKAGES[*]}"
    say "or point WORDNET_DIR at a WordNet 3.0 dict folder and re-run this script,"
    say "or, with network access:  python -m nltk.downloader -d $TARGET wordnet"
    exit 1
  fi
fi
if [ -n "$(missing_files)" ]; then
  say "still missing in $WORDNET_DIR after installing ${PACKAGES[*]}: $(missing_files)"
  exit 1
fi

DEST="$TARGET/corpora/wordnet"
mkdir -p "$DEST"
for f in "${DB_FILES[@]}"; do cp "$WORDNET_DIR/$f" "$DEST/$f"; done

# WordNet 3.0's lexnames (see lexnames(5WN)): file number, lexicographer file name, syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb), tab separated. Synsets store the file number; nltk maps it
# to the name through this list and checks that line i holds number i.
lexname_category() {
  case "$1" in
    noun.*) echo 1 ;;
    verb.*) echo 2 ;;
    adj.*) echo 3 ;;
    adv.*) echo 4 ;;
  esac
}
LEXNAMES=(adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location
noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process
noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change
verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation
verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl)
i=0
: >"$DEST/lexnames"
for name in "${LEXNAMES[@]}"; do
  printf '%02d\t%s\t%s\n' "$i" "$name" "$(lexname_category "$name")" >>"$DEST/lexnames"
  i=$((i + 1))
done

PY="$VENV/bin/python"
[ -x "$PY" ] || PY=python3
if ! "$PY" -c "import nltk" 2>/dev/null; then
  say "installed in $DEST; nltk is not installed, so not checked: pip install -e '.[meteor]'"
  exit 0
fi
WORDNET_NLTK_DATA="$TARGET" "$PY" - <<'EOF'
import os

import nltk

nltk.data.path[:] = [os.environ["WORDNET_NLTK_DATA"]]  # check this copy, not another one nltk might find
from nltk.corpus import wordnet as wn  # noqa: E402

dog = wn.synset("dog.n.01")
assert dog.lexname() == "noun.animal", dog.lexname()
assert "large" in {lemma.name() for s in wn.synsets("big") for lemma in s.lemmas()}
print(f"[wordnet] ok: WordNet {wn.get_version()} loads in nltk ({dog.lexname()} for dog.n.01)")
EOF
say "installed in $DEST"
