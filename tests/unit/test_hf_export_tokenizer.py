"""What an export says about its text: the casing its model folder records, and generate.py only where BERT's
WordPiece tokenizer reads the model's ids."""

import json
import os

import pytest

from unilm_fairseq.hf_export import export_checkpoint
from unilm_fairseq.hf_export.layouts import ExportError

from ..helpers.hub import save_seq2seq_checkpoint
from ..helpers.seq2seq import D, sharpened_model


def test_a_fairseq_dictionary_gets_no_generate_script_and_the_folder_casing_is_kept(tmp_path):
    """D is a fairseq dict.txt (its pieces are whatever the data was encoded with): generate.py, which runs
    BERT's tokenizer, would turn every source into [UNK], so it is left out and said so; the model folder's
    "lowercase" becomes the tokenizer's do_lower_case unless the export is told otherwise."""
    checkpoint = save_seq2seq_checkpoint(
        str(tmp_path / "ckpt"), sharpened_model(D, "pseudo_masked", rel_pos_bins=0), 12, 10
    )
    done = export_checkpoint(checkpoint, str(tmp_path / "bert"), format="bert")
    assert "generation.json" in done.files and "generate.py" not in done.files
    assert not (tmp_path / "bert" / "generate.py").exists()
    assert "generate.py" not in (tmp_path / "bert" / "README.md").read_text()  # the card does not offer it
    for lowercase in (True, False):
        (tmp_path / "ckpt" / "generation.json").write_text(json.dumps({"lowercase": lowercase}))
        out = export_checkpoint(checkpoint, str(tmp_path / f"cased{lowercase}"), format="bert").out_dir
        with open(f"{out}/tokenizer_config.json", encoding="utf-8") as f:
            assert json.load(f)["do_lower_case"] is lowercase
    told = export_checkpoint(checkpoint, str(tmp_path / "told"), format="bert", lowercase=True).out_dir
    with open(f"{told}/tokenizer_config.json", encoding="utf-8") as f:
        assert json.load(f)["do_lower_case"] is True


def test_a_broken_file_beside_the_checkpoint_is_named(tmp_path):
    checkpoint = save_seq2seq_checkpoint(
        str(tmp_path / "ckpt"), sharpened_model(D, "pseudo_masked", rel_pos_bins=0), 12, 10
    )
    (tmp_path / "ckpt" / "scores.json").write_text('{"num_pairs": 3,')
    with pytest.raises(ExportError, match=r"scores.json: not a JSON file"):
        export_checkpoint(checkpoint, str(tmp_path / "out"), format="bert")
    (tmp_path / "ckpt" / "scores.json").write_text("[1, 2]")
    with pytest.raises(ExportError, match=r"scores.json: a JSON list, not an object"):
        export_checkpoint(checkpoint, str(tmp_path / "out"), format="bert")


def test_a_folder_that_decoded_another_checkpoint_lends_it_neither_settings_nor_scores(tmp_path):
    """Exporting checkpoint_last.pt from a folder whose test run decoded checkpoint_best.pt: generation.json
    gets the default search settings, and the card names the decoded checkpoint instead of showing its
    scores as this one's."""
    checkpoint = save_seq2seq_checkpoint(
        str(tmp_path / "ckpt"), sharpened_model(D, "pseudo_masked", rel_pos_bins=0), 12, 10
    )
    name = os.path.basename(checkpoint)
    scores = {"num_pairs": 3, "rouge_backend": "rouge-score", "scores": {"model": {"rouge1": 41.5}}}
    (tmp_path / "ckpt" / "scores.json").write_text(json.dumps(scores))
    for decoded, beam in (("other.pt", 5), (name, 3)):
        (tmp_path / "ckpt" / "generation.json").write_text(json.dumps({"checkpoint": decoded, "beam": 3}))
        out = export_checkpoint(checkpoint, str(tmp_path / decoded), format="bert").out_dir
        with open(f"{out}/generation.json", encoding="utf-8") as f:
            assert json.load(f)["beam"] == beam
        with open(f"{out}/README.md", encoding="utf-8") as f:
            card = f.read()
        assert ("41.50" in card) == (decoded == name)
        assert ("decoded the test set with `other.pt`" in card) == (decoded != name)
