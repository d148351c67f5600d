"""Sentence-level and span heads on the unilmv2 model: inputs from src_tokens, padding, checkpoint fitting."""

import torch

from unilm_fairseq import masks
from unilm_fairseq.seq2seq_layout import pair_segments

from ..helpers.models import make_dictionary, tiny_model


def test_pair_segments_hand_checked():
    d = make_dictionary()
    bos, eos, pad, a, b = d.bos(), d.eos(), d.pad(), d.index("w1"), d.index("w2")
    tokens = torch.tensor(
        [
            [bos, a, a, eos, b, eos, pad],  # BERT style: [SOS] A [EOS] B [EOS]
            [bos, a, eos, eos, b, b, eos],  # RoBERTa style: a doubled separator
            [bos, a, a, a, eos, pad, pad],  # one sentence
        ]
    )
    assert pair_segments(tokens, eos).tolist() == [
        [0, 0, 0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1, 1, 1],
        [0, 0, 0, 0, 0, 1, 1],
    ]
    assert pair_segments(tokens, eos, num_segments=1).max() == 0


def sharpen(model):
    """BERT init leaves a tiny model near uniform; larger weights make input differences show."""
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.mul_(10)
    return model


def test_src_tokens_forward_equals_explicit_layout():
    d = make_dictionary()
    model = tiny_model(d)
    model.register_classification_head("cls", num_classes=3)
    sharpen(model.eval())
    src = torch.tensor([[d.bos(), 7, 8, d.eos(), 9, 10, d.eos()]])
    segments = torch.tensor([[0, 0, 0, 0, 1, 1, 1]])
    positions = torch.arange(7).unsqueeze(0)
    visible = masks.bidirectional_mask(7).unsqueeze(0)
    explicit, _ = model(src, segments, positions, visible, classification_head_name="cls")
    implicit, _ = model(src_tokens=src, src_lengths=torch.tensor([7]), classification_head_name="cls")
    assert explicit.shape == (1, 3)
    torch.testing.assert_close(implicit, explicit, rtol=0, atol=1e-5)
    # the segment ids matter: the same tokens with every segment 0 give other logits
    flat, _ = model(src, torch.zeros_like(segments), positions, visible, classification_head_name="cls")
    assert (flat - explicit).abs().max() > 1e-2


def test_classification_and_span_logits_do_not_depend_on_padding():
    d = make_dictionary()
    model = tiny_model(d)
    model.register_classification_head("cls", num_classes=2)
    model.register_span_head("qa")
    sharpen(model.eval())
    short = [d.bos(), 5, 6, d.eos(), 7, d.eos()]
    long = [d.bos(), 8, 9, 10, 11, d.eos(), 12, 13, d.eos()]
    batch = torch.full((2, len(long)), d.pad())
    batch[0, : len(short)] = torch.tensor(short)
    batch[1] = torch.tensor(long)
    cls_batch, _ = model(src_tokens=batch, classification_head_name="cls")
    span_batch, _ = model(src_tokens=batch, span_head_name="qa")
    cls_alone, _ = model(src_tokens=torch.tensor([short]), classification_head_name="cls")
    span_alone, _ = model(src_tokens=torch.tensor([short]), span_head_name="qa")
    assert span_batch.shape == (2, len(long), 2)
    torch.testing.assert_close(cls_batch[:1], cls_alone, rtol=0, atol=1e-4)
    torch.testing.assert_close(span_batch[:1, : len(short)], span_alone, rtol=0, atol=1e-4)
    assert (cls_batch[0] - cls_batch[1]).abs().max() > 1e-2  # the rows really differ


def test_heads_fit_a_checkpoint_without_them_and_drop_foreign_ones():
    d = make_dictionary()
    pretrained = tiny_model(d, seed=1).state_dict()  # a pre-trained model: no heads
    model = tiny_model(d, seed=2)
    model.register_classification_head("mnli", num_classes=3)
    fresh_head = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("classification_heads")}
    foreign = dict(pretrained)
    foreign["classification_heads.other.dense.weight"] = torch.zeros(1)  # another task's head
    model.load_state_dict(foreign, strict=True)  # fairseq's path: upgrade_state_dict, then strict loading
    state = model.state_dict()
    for key, value in pretrained.items():
        torch.testing.assert_close(state[key], value, rtol=0, atol=0)
    for key, value in fresh_head.items():
        torch.testing.assert_close(state[key], value, rtol=0, atol=0)
    assert "classification_heads.other.dense.weight" not in state
