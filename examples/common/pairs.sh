# shellcheck shell=bash
# Checks and counts the fine-tuning scripts share. Sourced, not run.
# require_pair_files DIR WHY: stop, naming the first missing file, unless DIR holds {train,valid,test}.{src,tgt}.
require_pair_files() {
  local dir=$1 why=$2 split side
  for split in train valid test; do
    for side in src tgt; do
      if [ ! -f "$dir/$split.$side" ]; then
        echo "$dir/$split.$side: no such file ($why)" >&2
        exit 1
      fi
    done
  done
}

# updates_for_epochs TRAIN_SRC BATCH EPOCHS: the updates EPOCHS passes over TRAIN_SRC's lines take (the papers
# give epochs; fairseq's schedules count updates)
updates_for_epochs() {
  local train=$1 batch=$2 epochs=$3 examples
  if [ ! -f "$train" ]; then
    echo "$train: no such file (the prepare stage writes it; or set STEPS)" >&2
    exit 1
  fi
  examples=$(wc -l < "$train")
  echo $(( (examples + batch - 1) / batch * epochs ))
}
