"""The recipes' fairseq-hydra-train configs (examples/*/config/*.yaml) run as they are, a tiny model and a
few updates given as overrides: s2s-ft fine-tuning, UniLMv2 and UniLM v1 pre-training, PALM fine-tuning,
SQuAD and GLUE. The checkpoints hold the configs' settings; a value a config takes from the environment is
named when unset.
(tests/unit/test_recipes.py checks the configs' values against the shell recipes.)"""

import random

import pytest
import torch

from ..helpers.cli import binarize, binarize_pairs, run_cli, train_records
from ..helpers.sentence_pairs import WORDS, write_pair_task
from ..helpers.sentence_pairs import binarize as binarize_sentence_pairs
from ..helpers.squad import write_squad_dir

pytestmark = pytest.mark.slow

TINY = ["common.fp16=false", "common.cpu=true", "common.log_interval=1", "dataset.num_workers=0",
        "dataset.batch_size=4", "optimization.update_freq=[1]", "checkpoint.save_interval_updates=0",
        "distributed_training.distributed_world_size=1"]  # fmt: skip


@pytest.fixture(scope="module")
def pairs_bin(tmp_path_factory):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(20)]
    pairs = []
    for _ in range(24):
        line = " ".join(rng.choices(words, k=6))
        pairs.append((line, line))
    return binarize_pairs(tmp_path_factory.mktemp("pairs"), pairs)


# the recipes validate on ROUGE with their test decoding (40+ tokens, "." exempt from n-gram blocking):
# the same path at the tiny data's size
TINY_ROUGE = ["""task.eval_rouge_args='{"beam": 2, "max_len_b": 6}'"""]


def hydra_train(config_dir, name, save, *overrides, env=None, check=True):
    return run_cli(["fairseq-hydra-train", "--config-dir", config_dir, "--config-name", name,
                    f"checkpoint.save_dir={save}", *TINY, *overrides], env=env, check=check)  # fmt: skip


def checkpoint_cfg(save):
    state = torch.load(save / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    return state["cfg"], state["model"]


def test_s2s_ft_config(pairs_bin, tmp_path):
    save = tmp_path / "ckpt"
    proc = hydra_train("examples/s2s_ft/config", "cnndm", save, f"task.data={pairs_bin}",
                       "task.pretrained_checkpoint=null", "model._name=unilmv2_tiny",
                       "task.max_source_positions=16", "task.max_target_positions=16", *TINY_ROUGE,
                       "task.no_repeat_ngram_exempt=null",
                       env={"STEPS": "2", "WARMUP": "1"})  # fmt: skip
    records = train_records(proc.stdout + proc.stderr)
    assert [r["num_updates"] for r in records] == [1, 2] and all(r["loss"] > 0 for r in records)
    cfg, model = checkpoint_cfg(save)
    # the config's settings, the recipe's (cnndm.sh)
    assert cfg["criterion"]["label_smoothing"] == 0.1 and cfg["optimization"]["lr"] == [7e-05]
    assert cfg["task"]["finetune_method"] == "pseudo_masked" and cfg["task"]["target_word_drop_prob"] == 0.7
    assert cfg["optimizer"]["adam_eps"] == 1e-06 and cfg["optimizer"]["weight_decay"] == 0.01
    assert cfg["optimization"]["max_update"] == 2 and cfg["lr_scheduler"]["total_num_update"] == 2
    assert cfg["task"]["eval_rouge"] and cfg["checkpoint"]["best_checkpoint_metric"] == "rouge_l"
    assert "rouge_l" in proc.stdout + proc.stderr  # validation decoded and scored
    # the architecture named in an override applies its presets (unilmv2_tiny: 3 layers, hidden 64)
    assert cfg["model"]["encoder_layers"] == 3 and model["lm_head.dense.weight"].shape == (64, 64)
    assert (save / "hydra_train.log").is_file()  # the log beside the checkpoints

    proc = hydra_train("examples/s2s_ft/config", "cnndm", tmp_path / "none", f"task.data={pairs_bin}",
                       env={"WARMUP": "1", "PRETRAINED": "x"}, check=False)  # fmt: skip
    assert proc.returncode != 0 and "Environment variable 'STEPS' not found" in proc.stderr


def test_finetune_config(pairs_bin, tmp_path):
    """finetune.sh's config (the main job's values, the MiniLM's sizes) runs; the schedule's end, a copy of
    max_update, follows an override of it."""
    save = tmp_path / "ckpt"
    proc = hydra_train("examples/s2s_ft/config", "finetune", save, f"task.data={pairs_bin}",
                       "task.pretrained_checkpoint=null", "model.encoder_layers=2",
                       "optimization.max_update=2", "dataset.validate_interval_updates=2")  # fmt: skip
    records = train_records(proc.stdout + proc.stderr)
    assert [r["num_updates"] for r in records] == [1, 2] and all(r["loss"] > 0 for r in records)
    cfg, model = checkpoint_cfg(save)
    assert cfg["optimization"]["lr"] == [3e-4] and cfg["lr_scheduler"]["warmup_updates"] == 25
    assert cfg["lr_scheduler"]["total_num_update"] == 2 and cfg["dataset"]["validate_interval_updates"] == 2
    assert cfg["model"]["encoder_embed_dim"] == 384 and cfg["optimizer"]["adam_eps"] == 1e-6


def documents(seed):
    """A pre-training corpus: 12 documents of 4 random 8-word sentences, an empty line after each."""
    rng = random.Random(seed)
    lines = []
    for _ in range(12):
        lines += [" ".join(rng.choices([f"w{i}" for i in range(30)], k=8)) for _ in range(4)] + [""]
    return lines


def test_unilmv2_pretraining_config(tmp_path):
    data = binarize(tmp_path, documents(seed=1))
    save = tmp_path / "ckpt"
    proc = hydra_train("examples/unilmv2_pretrain/config", "pretrain_base", save, f"task.data={data}",
                       "task.tokens_per_sample=64", "model._name=unilmv2_tiny", "optimization.max_update=2",
                       "lr_scheduler.warmup_updates=1", "dataset.disable_validation=true")  # fmt: skip
    log = proc.stdout + proc.stderr
    records = train_records(log)
    assert [r["num_updates"] for r in records] == [1, 2] and all(
        "ae_loss" in r and "par_loss" in r for r in records
    )
    cfg, _ = checkpoint_cfg(save)
    assert cfg["task"]["span_prob"] == 0.4 and cfg["task"]["objectives"] == "ae,par"
    assert cfg["optimizer"]["adam_betas"] == "(0.9, 0.98)" and cfg["model"]["max_rel_pos"] == 128


def test_unilm_v1_pretraining_config(tmp_path):
    """UniLM v1 large's config with its sizes overridden down (the preset keeps its six segment ids)."""
    data = binarize(tmp_path, documents(seed=2))
    save = tmp_path / "ckpt"
    sizes = ["+model.encoder_layers=2", "+model.encoder_embed_dim=32", "+model.encoder_ffn_embed_dim=64",
             "+model.encoder_attention_heads=2"]  # fmt: skip
    proc = hydra_train("examples/unilm_v1_pretrain/config", "pretrain_large", save, f"task.data={data}",
                       "task.tokens_per_sample=64", *sizes, "optimization.max_update=2",
                       "lr_scheduler.warmup_updates=1", "dataset.disable_validation=true")  # fmt: skip
    records = train_records(proc.stdout + proc.stderr)
    assert [r["num_updates"] for r in records] == [1, 2] and all(r["loss"] > 0 for r in records)
    cfg, _ = checkpoint_cfg(save)
    assert cfg["task"]["objective_weights"] == [2, 2, 1, 1] and cfg["task"]["span_prob"] == 0.2
    assert cfg["optimizer"]["adam_betas"] == "(0.9, 0.999)" and cfg["model"]["num_segments"] == 6


def test_palm_config(pairs_bin, tmp_path):
    save = tmp_path / "ckpt"
    positions = [
        f"{part}.{side}_positions=16" for part in ("task", "model") for side in ("max_source", "max_target")
    ]
    hydra_train("examples/palm/config", "cnndm", save, f"task.data={pairs_bin}", "model._name=palm_tiny",
                "task.pretrained_checkpoint=null", "lr_scheduler.warmup_updates=1", *positions, *TINY_ROUGE,
                env={"STEPS": "2"})  # fmt: skip
    cfg, model = checkpoint_cfg(save)
    assert cfg["criterion"]["_name"] == "label_smoothed_cross_entropy" and cfg["task"]["truncate_source"]
    assert model["encoder.embed_tokens.weight"].shape[1] == 64  # palm_tiny
    assert model["encoder.embed_positions.weight"].shape[0] == 16 + 2  # the model's limit: the override's


def test_squad_config(tmp_path):
    """SQuAD v2.0's config (UniLMv2 Table 9 and the answerability classifier of §4.2) with a tiny model and
    short windows; the updates from the environment, as the recipe counts them."""
    write_squad_dir(tmp_path, train_paragraphs=8, valid_paragraphs=4, unanswerable_prob=0.3)
    save = tmp_path / "ckpt"
    proc = hydra_train("examples/squad/config", "squad_v2", save, f"task.data={tmp_path}",
                       "model._name=unilmv2_tiny", "task.max_seq_length=64", "task.doc_stride=24",
                       "task.max_query_length=16", env={"STEPS": "2", "WARMUP": "1"})  # fmt: skip
    records = train_records(proc.stdout + proc.stderr)
    assert [r["num_updates"] for r in records] == [1, 2] and all(r["loss"] > 0 for r in records)
    cfg, model = checkpoint_cfg(save)
    assert cfg["task"]["answerability_head"] is True and cfg["criterion"]["answerability_weight"] == 1.0
    assert cfg["optimization"]["lr"] == [2e-5] and cfg["optimizer"]["weight_decay"] == 0.01
    assert any("squad_answerability_head" in key for key in model)


def test_glue_config(tmp_path):
    """GLUE's UniLM v1 config (Adamax, UniLM v1 §3.5) on a tiny sentence-pair task with a BERT-style
    vocabulary, the model cut down to unilmv2_tiny; the updates from the environment."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    write_pair_task(tmp_path)
    data = binarize_sentence_pairs(
        tmp_path,
        srcdict=vocab,
        task_args=["--user-dir", "unilm_fairseq", "--task", "unilm_sentence_prediction"],
    )
    save = tmp_path / "ckpt"
    proc = hydra_train(
        "examples/glue/config",
        "glue_unilm_v1",
        save,
        f"task.data={data}",
        "model._name=unilmv2_tiny",
        "task.max_positions=64",
        env={"STEPS": "2", "WARMUP": "1"},
    )
    records = train_records(proc.stdout + proc.stderr)
    assert [r["num_updates"] for r in records] == [1, 2] and all(r["loss"] > 0 for r in records)
    cfg, _ = checkpoint_cfg(save)
    assert cfg["optimizer"]["_name"] == "adamax" and cfg["optimization"]["lr"] == [5e-5]
    assert cfg["model"]["pooler_dropout"] == 0.1 and cfg["lr_scheduler"]["end_learning_rate"] == 0
