"""UniLM v1 models fine-tune and decode with their seq2seq LM's segment ids 4/5 (Dong et al. 2019 §2.1,
§2.5): how the ids are chosen from a checkpoint, that training and cached decoding feed exactly those
rows of the segment table, and that decoding with them agrees with the training forward.

Tiny models with 6 segment embeddings (UniLM v1's LM identifiers), dropout off.
"""

import logging

import pytest
import torch
from omegaconf import OmegaConf

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.checkpoint.unilmv2_init import checkpoint_seq2seq_segments
from unilm_fairseq.criterions.unilm_seq2seq import UniLMSeq2SeqCriterion
from unilm_fairseq.tasks.unilm_seq2seq import _TokenList

from ..helpers.models import save_checkpoint, tiny_config, tiny_model
from ..helpers.seq2seq import (
    SOURCES,
    TARGETS,
    D,
    assert_same_hypotheses,
    collate,
    generate,
    incremental_logprobs,
    make_task,
    pairs_dataset,
    recomputed_logprobs,
    sharpened_model,
    training_logprobs,
)

V1, PAIR = (4, 5), (0, 1)
V1_ROWS = 6
TOL = 1e-5
V1_OPTIONS = dict(num_segments=V1_ROWS, seq2seq_source_segment=4, seq2seq_target_segment=5)

pytestmark = pytest.mark.usefixtures("one_thread")


def model_config(**overrides):
    """What fairseq hands ``build_model``: a structured config naming the model."""
    cfg = OmegaConf.structured(tiny_config(**overrides))
    cfg._name = "unilmv2"
    return cfg


@pytest.fixture
def v1_checkpoint(tmp_path):
    """A UniLM v1 pre-trained checkpoint: six segment embeddings, no config (like a bare state dict)."""
    path = tmp_path / "v1.pt"
    save_checkpoint(tiny_model(D, seed=4, num_segments=V1_ROWS).state_dict(), path)
    return str(path)


def _token_lists():
    return _TokenList(SOURCES), _TokenList(TARGETS)


def segment_gradient_rows(model):
    """The rows of the segment table whose gradient is not exactly zero."""
    grad = model.transformer.embeddings.segments.weight.grad
    return [row for row in range(grad.size(0)) if bool(grad[row].ne(0).any())]


# ---------------------------------------------------------------------------------------------------
# the choice


def test_checkpoint_segments_follow_the_segment_table(tmp_path, v1_checkpoint):
    assert checkpoint_seq2seq_segments(v1_checkpoint)[0] == V1
    assert "6 segment embeddings" in checkpoint_seq2seq_segments(v1_checkpoint)[1]
    for rows in (2, 0):  # BERT's pair ids; a model without segment embeddings
        path = tmp_path / f"rows{rows}.pt"
        save_checkpoint(tiny_model(D, num_segments=rows).state_dict(), path)
        assert checkpoint_seq2seq_segments(str(path))[0] == PAIR


def test_a_fine_tuned_checkpoint_keeps_the_ids_it_was_tuned_with(tmp_path):
    # six rows, but fine-tuned with --seq2seq-segment-ids 0-1: continuing from it keeps 0/1
    state = {
        "model": tiny_model(D, num_segments=V1_ROWS).state_dict(),
        "cfg": {"task": {"_name": "unilm_seq2seq"}, "model": {"seq2seq_source_segment": 0,
                                                              "seq2seq_target_segment": 1}},
        "args": None,
        "optimizer_history": [
            {"criterion_name": "x", "optimizer_name": "x", "lr_scheduler_state": {}, "num_updates": 0}
        ],
        "extra_state": {"train_iterator": None},
    }  # fmt: skip
    torch.save(state, tmp_path / "tuned.pt")
    segments, reason = checkpoint_seq2seq_segments(str(tmp_path / "tuned.pt"))
    assert segments == PAIR and "fine-tuned by --task unilm_seq2seq" in reason


def test_auto_fine_tunes_a_v1_checkpoint_with_4_5_and_records_them(v1_checkpoint):
    task = make_task(pretrained_checkpoint=v1_checkpoint, max_source_positions=32, max_target_positions=16)
    assert task.seq2seq_spec.segments == V1
    batch = collate(task._dataset(*_token_lists()))
    net_input = batch["net_input"]
    real = net_input["tokens"].ne(D.pad())
    sources = [len(s) + 1 for s in SOURCES]  # [SOS] added
    for row, n_src in enumerate(sources):
        assert net_input["segments"][row, :n_src].eq(4).all()
        assert net_input["segments"][row, n_src:][real[row, n_src:]].eq(5).all()  # targets and [P]
    assert set(net_input["segments"].unique().tolist()) == {4, 5}  # padding too gets the source id
    model = task.build_model(model_config(num_segments=V1_ROWS))
    assert (model.cfg.seq2seq_source_segment, model.cfg.seq2seq_target_segment) == V1
    assert model.encoder.spec.source_segment == 4 and model.decoder.spec.segments == V1


def test_explicit_ids_override_auto(v1_checkpoint):
    task = make_task(pretrained_checkpoint=v1_checkpoint, seq2seq_segment_ids="0-1", max_source_positions=32,
                     max_target_positions=16)  # fmt: skip
    assert task.seq2seq_spec.segments == PAIR
    model = task.build_model(model_config(num_segments=V1_ROWS))
    assert model.decoder.spec.segments == PAIR and model.cfg.seq2seq_target_segment == 1


@pytest.mark.parametrize("segment_ids", ["auto", "0-1"])
def test_the_pretrained_checkpoint_is_read_once(v1_checkpoint, monkeypatch, segment_ids):
    """Its segment ids (auto) and its weights come from one read of the file."""
    from fairseq import checkpoint_utils

    reads, read = [], checkpoint_utils.load_checkpoint_to_cpu

    def counted(path, *args, **kwargs):
        reads.append(path)
        return read(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint_utils, "load_checkpoint_to_cpu", counted)
    limits = dict(max_source_positions=32, max_target_positions=16)
    task = make_task(pretrained_checkpoint=v1_checkpoint, seq2seq_segment_ids=segment_ids, **limits)
    task._dataset(*_token_lists())  # fairseq-train loads the valid split before it builds the model
    model = task.build_model(model_config(num_segments=V1_ROWS))
    assert reads == [v1_checkpoint]
    pretrained = tiny_model(D, seed=4, num_segments=V1_ROWS).transformer.embeddings.segments.weight
    assert torch.equal(model.transformer.embeddings.segments.weight, pretrained)


def test_without_a_checkpoint_auto_is_0_1():
    assert make_task().seq2seq_spec.segments == PAIR


def test_4_5_on_a_two_segment_model_is_a_clear_error():
    task = make_task(seq2seq_segment_ids="4-5", max_source_positions=32, max_target_positions=16)
    with pytest.raises(ValueError, match=r"--num-segments 6"):
        task.build_model(model_config(num_segments=2))
    # the check belongs to seq2seq fine-tuning: other tasks still build a one-segment model
    tiny_model(D, num_segments=1)
    with pytest.raises(ValueError, match=r"\(0, 1\) need segment embeddings 0..1, but the model has 1"):
        make_task(max_source_positions=32, max_target_positions=16).build_model(model_config(num_segments=1))


def test_generation_takes_the_ids_from_the_checkpoint_config(caplog):
    task = make_task(max_source_positions=32, max_target_positions=16)
    model = task.build_model(model_config(**V1_OPTIONS), from_checkpoint=True)
    assert task.seq2seq_spec.segments == V1 and model.decoder.spec.segments == V1
    assert task._dataset(*_token_lists()).spec.segments == V1  # the gen subset is laid out with them too
    # a config from before the record: 0/1, the ids such checkpoints were fine-tuned with
    old = OmegaConf.create({k: v for k, v in OmegaConf.to_container(model_config()).items()
                            if not k.endswith("_segment")})  # fmt: skip
    task = make_task(max_source_positions=32, max_target_positions=16)
    assert task.build_model(old, from_checkpoint=True).decoder.spec.segments == PAIR
    # an explicit choice at generation wins, with a warning
    task = make_task(seq2seq_segment_ids="0-1", max_source_positions=32, max_target_positions=16)
    with caplog.at_level(logging.WARNING):
        model = task.build_model(model_config(**V1_OPTIONS), from_checkpoint=True)
    assert model.decoder.spec.segments == PAIR and task.seq2seq_spec.segments == PAIR
    assert "not the checkpoint's (4, 5)" in caplog.text


# ---------------------------------------------------------------------------------------------------
# the ids reach the embeddings: gradients flow into rows 4 and 5 only


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_fine_tuning_step_trains_only_segment_rows_4_and_5(method, v1_checkpoint):
    task = make_task(pretrained_checkpoint=v1_checkpoint, finetune_method=method, target_word_drop_prob=0.3,
                     max_source_positions=32, max_target_positions=16)  # fmt: skip
    model = task.build_model(model_config(num_segments=V1_ROWS)).train()
    batch = collate(task._dataset(*_token_lists()))
    assert batch["net_input"]["tokens"].eq(D.pad()).any()  # padding in the batch
    loss, _, _ = UniLMSeq2SeqCriterion(task)(model, batch)
    loss.backward()
    assert segment_gradient_rows(model) == [4, 5]


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_cached_decoding_reads_only_segment_rows_4_and_5(method):
    model = tiny_model(D, seq2seq_method=method, **V1_OPTIONS)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    prev = torch.cat([torch.full((3, 1), D.eos()), torch.stack([t[:2] for t in TARGETS])], 1)
    state, total = {}, 0
    encoder_out = model.encoder(src_tokens)
    for t in range(prev.size(1)):
        logits, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
        total = total + logits.float().logsumexp(-1).sum()
    total.backward()
    assert segment_gradient_rows(model) == [4, 5]


# ---------------------------------------------------------------------------------------------------
# decoding with 4/5 agrees with the training forward


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_v1_training_forward_equals_cached_and_recomputed_decoding(method):
    model = sharpened_model(D, method, **V1_OPTIONS)
    src_tokens = collate(pairs_dataset(method))["net_input"]["src_tokens"]
    trained, targets = training_logprobs(model, method, segments=V1)
    cached = incremental_logprobs(model, src_tokens, targets)
    recomputed = recomputed_logprobs(model, src_tokens, targets)
    for a, b, c in zip(trained, cached, recomputed):
        assert torch.allclose(a, b, atol=TOL), (method, (a - b).abs().max())
        assert torch.allclose(a, c, atol=TOL), (method, (a - c).abs().max())
    # negative control: the same weights decoding with 0/1 do not reproduce the 4/5 training forward
    pair_model = sharpened_model(D, method, num_segments=V1_ROWS)
    pair_model.load_state_dict(model.state_dict())
    off = incremental_logprobs(pair_model, src_tokens, targets)
    assert max(float((a - b).abs().max()) for a, b in zip(trained, off)) > 1e-3


@pytest.mark.parametrize("method", seq2seq_layout.METHODS)
def test_v1_beam_search_cached_equals_recomputed(method):
    model = sharpened_model(D, method, **V1_OPTIONS)
    batch = collate(pairs_dataset(method, segments=V1))
    cached = generate(model, batch, incremental=True, beam=4)
    recomputed = generate(model, batch, incremental=False, beam=4)
    assert_same_hypotheses(cached, recomputed)
    assert [len(h) for h in cached] == [4, 4, 4]
