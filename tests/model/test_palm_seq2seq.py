"""Task ``palm_seq2seq``: empty lines skipped and counted, one dictionary with <mask>, pre-trained weights."""

import logging

import pytest
import torch

from unilm_fairseq.checkpoint.palm_init import load_palm_weights
from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask

from ..helpers.cli import preprocess
from ..helpers.models import save_checkpoint
from ..helpers.palm import palm_args, palm_model

SOURCES = ["a b c", "", "a b", "c a", "", "b"]
TARGETS = ["b c", "a", "", "a b", "", "c"]


@pytest.fixture(scope="module")
def messy_pairs(tmp_path_factory):
    work = tmp_path_factory.mktemp("palm_pairs")
    (work / "dict.txt").write_text("a 5\nb 5\nc 5\n")
    (work / "other.txt").write_text("a 5\nb 5\nd 5\n")
    (work / "train.src").write_text("\n".join(SOURCES) + "\n")
    (work / "train.tgt").write_text("\n".join(TARGETS) + "\n")
    for name, tgtdict in (("bin", "dict.txt"), ("bin-mismatch", "other.txt")):
        preprocess(["--source-lang", "src", "--target-lang", "tgt", "--srcdict", str(work / "dict.txt"),
                    "--tgtdict", str(work / tgtdict), "--trainpref", str(work / "train"),
                    "--destdir", str(work / name), "--workers", "1"])  # fmt: skip
    return work


def task_for(path):
    cfg = PALMSeq2SeqConfig(
        data=str(path), train_subset="train", dataset_impl=None, required_seq_len_multiple=1
    )
    return PALMSeq2SeqTask.setup_task(cfg)


def test_empty_pairs_are_skipped_and_counted(messy_pairs, caplog):
    task = task_for(messy_pairs / "bin")
    assert task.source_dictionary is task.target_dictionary
    assert task.source_dictionary.index("<mask>") == len(task.source_dictionary) - 1
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    assert any(
        "train: 6 pairs; skipped 3 with an empty source or target" in r.getMessage() for r in caplog.records
    )
    batches = list(
        task.get_batch_iterator(dataset, max_sentences=2, required_batch_size_multiple=1).next_epoch_itr(
            shuffle=False
        )
    )
    ids = sorted(i for b in batches for i in b["id"].tolist())
    assert ids == [0, 3, 5]  # raw line numbers survive the skips
    model = palm_model(task.source_dictionary)
    for sample in batches:
        lprobs, _ = model(**sample["net_input"])
        assert bool(torch.isfinite(lprobs).all())


def test_different_dictionaries_are_a_clear_error(messy_pairs):
    with pytest.raises(ValueError, match="joined-dictionary"):
        task_for(messy_pairs / "bin-mismatch")


def test_pretrained_weights_load_without_the_mlm_head(tmp_path, messy_pairs):
    dictionary = task_for(messy_pairs / "bin").source_dictionary
    pretrained = palm_model(dictionary, seed=1)  # pre-training models have the MLM head
    path = tmp_path / "pretrained.pt"
    save_checkpoint(pretrained.state_dict(), path)
    finetune = palm_model(dictionary, seed=2, no_encoder_mlm_head=True)
    load_palm_weights(finetune, str(path))
    for key, value in finetune.state_dict().items():
        assert torch.equal(value, pretrained.state_dict()[key]), key
    # fine-tuning with --no-copy drops the copy attention and gate
    ablated = palm_model(dictionary, seed=2, no_encoder_mlm_head=True, no_copy=True)
    load_palm_weights(ablated, str(path))
    for key, value in ablated.state_dict().items():
        assert torch.equal(value, pretrained.state_dict()[key]), key
    # a shorter fine-tuning length keeps the first rows of the learned position tables
    shorter = palm_model(dictionary, seed=2, no_encoder_mlm_head=True, max_source_positions=20)
    load_palm_weights(shorter, str(path))
    table = "encoder.embed_positions.weight"
    assert torch.equal(
        shorter.state_dict()[table], pretrained.state_dict()[table][: 20 + dictionary.pad() + 1]
    )


def test_pretrained_mismatches_are_clear_errors(tmp_path, messy_pairs):
    dictionary = task_for(messy_pairs / "bin").source_dictionary
    path = tmp_path / "pretrained.pt"
    save_checkpoint(palm_model(dictionary).state_dict(), path)
    bigger = task_for(messy_pairs / "bin").source_dictionary
    bigger.add_symbol("zzz")
    with pytest.raises(ValueError, match="dict.txt"):
        load_palm_weights(palm_model(bigger), str(path))
    with pytest.raises(ValueError, match="--max-source-positions"):
        load_palm_weights(palm_model(dictionary, max_source_positions=60), str(path))
    save_checkpoint({"something.else": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a palm checkpoint"):
        load_palm_weights(palm_model(dictionary), str(tmp_path / "other.pt"))


@pytest.mark.parametrize(
    "ablation, fresh_part", [("autoencoding", "encoder."), ("autoregression", "decoder.")]
)
def test_table6_ablations_leave_one_side_at_random_initialisation(
    tmp_path, messy_pairs, ablation, fresh_part
):
    """PALM §3.7 ablates autoencoding and autoregression "by randomly initializing the weights of the
    encoder and the decoder, respectively": --pretrained-ablation loads the rest of the pre-trained model."""
    task = task_for(messy_pairs / "bin")
    dictionary = task.source_dictionary
    pretrained = palm_model(dictionary, seed=1)
    with torch.no_grad():  # LayerNorms start at 1 and 0 in any model: make every tensor "pre-trained"
        for param in pretrained.parameters():
            param.add_(0.1 * torch.randn_like(param))
    pretrained = pretrained.state_dict()
    path = tmp_path / "pretrained.pt"
    save_checkpoint(pretrained, path)
    fresh = palm_model(dictionary, seed=2, no_encoder_mlm_head=True).state_dict()  # the same seed's init
    task.cfg.pretrained_checkpoint, task.cfg.pretrained_ablation = str(path), ablation
    torch.manual_seed(2)
    state = task.build_model(palm_args()).state_dict()
    shared = state["encoder.embed_tokens.weight"].data_ptr()
    kept_fresh = [
        k
        for k in state
        if k.startswith(fresh_part) and state[k].data_ptr() != shared and not k.endswith(".version")
    ]
    assert any(".layers.1." in k for k in kept_fresh)
    if ablation == "autoregression":
        assert "decoder.pointer.gate_state.weight" in kept_fresh  # the pointer-generator is the decoder's
    for key, value in state.items():
        if key in kept_fresh:
            assert torch.equal(value, fresh[key]) and not torch.equal(value, pretrained[key]), key
        elif not key.endswith(".version"):
            assert torch.equal(value, pretrained[key]), key  # the other side and the shared token table

    task.cfg.pretrained_checkpoint = None
    with pytest.raises(
        ValueError, match=f"--pretrained-ablation {ablation} ablates a --pretrained-checkpoint"
    ):
        task.build_model(palm_args())
