"""Hand-checked s2s-ft layouts (docs/masks.md sections 3 and 7, :mod:`unilm_fairseq.seq2seq_layout`).

The example is the source "[SOS] a b [EOS]" (4 tokens, positions 0-3, segment 0) and the target
"x y [EOS]" (target j has position 4 + j, segment 1); the causal method moves the source's [EOS] to the
target side as its start token (s2s-ft §2.1, Figure 1a). Every expected tensor is written out
literally, one row per query and one column per key (1 = the query may attend the key), derived by hand
from the rules quoted above it.
"""

import pytest
import torch

from unilm_fairseq import seq2seq_layout
from unilm_fairseq.data.pretraining.unilm_objectives import SEGMENT_IDS, SEQ2SEQ
from unilm_fairseq.masks import padded_bidirectional_mask

from ..helpers.models import make_dictionary

D = make_dictionary()
SOS, EOS, PAD, M = D.bos(), D.eos(), D.pad(), D.index("<mask>")
A, B, X, Y = (D.index(w) for w in ("w0", "w1", "w2", "w3"))
SOURCE = torch.tensor([SOS, A, B, EOS])
TARGET = torch.tensor([X, Y, EOS])


def as_mask(rows):
    return torch.tensor(rows, dtype=torch.bool)


def assert_layout(layout, tokens, segments, positions, query, visible):
    assert layout["tokens"].tolist() == tokens
    assert layout["segments"].tolist() == segments
    assert layout["positions"].tolist() == positions
    assert layout["query"].dtype == torch.bool
    assert layout["query"].tolist() == as_mask(query).tolist()
    assert layout["visible"].dtype == torch.bool
    assert layout["visible"].tolist() == as_mask(visible).tolist()


def test_causal_feeds_the_start_token_and_all_but_the_last_target():
    # source segment "[SOS] a b"; the start token [EOS] (target segment, position 3, causal) predicts x,
    # x predicts y, y predicts [EOS]; the target's own [EOS] is never fed
    layout = seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "causal", M)
    assert_layout(
        layout,
        tokens=[SOS, A, B, EOS, X, Y],
        segments=[0, 0, 0, 1, 1, 1],
        positions=[0, 1, 2, 3, 4, 5],
        query=[0, 0, 0, 1, 1, 1],
        visible=[
            # S  a  b  E  x  y
            [1, 1, 1, 0, 0, 0],  # [SOS]: the source segment only
            [1, 1, 1, 0, 0, 0],  # a
            [1, 1, 1, 0, 0, 0],  # b
            [1, 1, 1, 1, 0, 0],  # start token [EOS]: source and itself (predicts x)
            [1, 1, 1, 1, 1, 0],  # x: source, start, itself (predicts y)
            [1, 1, 1, 1, 1, 1],  # y: source, start, x, itself (predicts [EOS])
        ],
    )


def test_causal_three_token_source_and_three_token_target():
    # source "[SOS] a [EOS]", target "x y [EOS]" (s2s-ft §2.1, Figure 1a; s2s-ft's "--mask_way v0"
    # packs "[CLS] a" with "[SEP] x y"): source segment "[SOS] a" at positions 0-1; target segment
    # "[EOS] x y" at positions 2-4 with causal attention; the outputs at [EOS], x, y predict x, y, [EOS]
    source = torch.tensor([SOS, A, EOS])
    layout = seq2seq_layout.build_example(source, TARGET, torch.ones(3, dtype=torch.bool), "causal", M)
    assert_layout(
        layout,
        tokens=[SOS, A, EOS, X, Y],
        segments=[0, 0, 1, 1, 1],
        positions=[0, 1, 2, 3, 4],
        query=[0, 0, 1, 1, 1],
        visible=[
            # S  a  E  x  y
            [1, 1, 0, 0, 0],  # [SOS]
            [1, 1, 0, 0, 0],  # a
            [1, 1, 1, 0, 0],  # start token [EOS] -> x
            [1, 1, 1, 1, 0],  # x -> y
            [1, 1, 1, 1, 1],  # y -> [EOS]
        ],
    )
    # the query outputs, in order, are the predictions of x, y, [EOS]
    assert layout["tokens"][layout["query"]].tolist() == [EOS, X, Y]  # inputs shifted one to the right


def test_masked_reads_predictions_at_the_predicted_mask_positions():
    # only y and [EOS] are predicted; their inputs are [M]; x stays a real input
    predict = torch.tensor([False, True, True])
    inputs = torch.tensor([X, M, M])
    layout = seq2seq_layout.build_example(SOURCE, inputs, predict, "masked", M)
    assert_layout(
        layout,
        tokens=[SOS, A, B, EOS, X, M, M],
        segments=[0, 0, 0, 0, 1, 1, 1],
        positions=[0, 1, 2, 3, 4, 5, 6],
        query=[0, 0, 0, 0, 0, 1, 1],
        visible=[
            # S  a  b  E  x  M  M
            [1, 1, 1, 1, 0, 0, 0],  # source sees source only
            [1, 1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 1, 0, 0],  # x: source and itself
            [1, 1, 1, 1, 1, 1, 0],  # [M] of y: source, x, itself
            [1, 1, 1, 1, 1, 1, 1],  # [M] of [EOS]: source, x, [M], itself
        ],
    )


def test_pseudo_masked_appends_one_pseudo_mask_per_target_with_its_position():
    # [P] j shares target j's position, sees the source, targets < j and itself; nobody else sees it
    layout = seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "pseudo_masked", M)
    assert_layout(
        layout,
        tokens=[SOS, A, B, EOS, X, Y, EOS, M, M, M],
        segments=[0, 0, 0, 0, 1, 1, 1, 1, 1, 1],
        positions=[0, 1, 2, 3, 4, 5, 6, 4, 5, 6],
        query=[0, 0, 0, 0, 0, 0, 0, 1, 1, 1],
        visible=[
            # S  a  b  E  x  y  E  P0 P1 P2
            [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],  # source sees source only
            [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
            [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],  # x: source, itself
            [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],  # y: source, x, itself
            [1, 1, 1, 1, 1, 1, 1, 0, 0, 0],  # target [EOS]: source, x, y, itself
            [1, 1, 1, 1, 0, 0, 0, 1, 0, 0],  # P0 (predicts x): source, itself
            [1, 1, 1, 1, 1, 0, 0, 0, 1, 0],  # P1 (predicts y): source, x, itself
            [1, 1, 1, 1, 1, 1, 0, 0, 0, 1],  # P2 (predicts [EOS]): source, x, y, itself
        ],
    )


def test_pseudo_masked_word_dropped_inputs_keep_every_prediction():
    # y's real input was dropped to [M]; all three targets are still read from their [P]
    inputs = torch.tensor([X, M, EOS])
    layout = seq2seq_layout.build_example(SOURCE, inputs, torch.ones(3, dtype=torch.bool), "pseudo_masked", M)
    assert layout["tokens"].tolist() == [SOS, A, B, EOS, X, M, EOS, M, M, M]
    assert layout["query"].tolist() == [False] * 7 + [True] * 3


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="unknown fine-tuning method 'bogus'"):
        seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "bogus", M)


def test_target_and_predict_shapes_must_match():
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(2, dtype=torch.bool), "masked", M)


def test_causal_rejects_a_partial_predict():
    with pytest.raises(ValueError, match="causal"):
        seq2seq_layout.build_example(SOURCE, TARGET, torch.tensor([True, False, True]), "causal", M)


def test_padded_bidirectional_mask_with_left_padding():
    # row 0 is left-padded by two; row 1 has no padding.
    # real queries see every real key; a padded query sees only itself (masks.padded_bidirectional_mask)
    padding = torch.tensor(
        [
            [True, True, False, False, False],
            [False, False, False, False, False],
        ]
    )
    visible = padded_bidirectional_mask(padding)
    assert visible.dtype == torch.bool
    assert (
        visible[0].tolist()
        == as_mask(
            [
                # p  p  r  r  r
                [1, 0, 0, 0, 0],  # pad: itself only
                [0, 1, 0, 0, 0],  # pad: itself only
                [0, 0, 1, 1, 1],  # real: the three real tokens
                [0, 0, 1, 1, 1],
                [0, 0, 1, 1, 1],
            ]
        ).tolist()
    )
    assert visible[1].tolist() == as_mask([[1] * 5] * 5).tolist()


def test_padded_bidirectional_mask_real_queries_never_see_padding():
    """The part of the contract the encoder's outputs depend on (left and right padding)."""
    padding = torch.tensor([[True, False, False], [False, False, True]])
    visible = padded_bidirectional_mask(padding)
    real_query = ~padding
    assert visible[0, 1].tolist() == [False, True, True]
    assert visible[0, 2].tolist() == [False, True, True]
    assert visible[1, 0].tolist() == [True, True, False]
    assert visible[1, 1].tolist() == [True, True, False]
    # every row, padded ones included, sees at least itself: no empty softmax row
    assert visible.diagonal(dim1=1, dim2=2).all()
    assert not (visible & padding.unsqueeze(1) & real_query.unsqueeze(2)).any()


def test_padded_bidirectional_mask_rejects_non_2d_padding():
    with pytest.raises(ValueError, match=r"\(B, S\)"):
        padded_bidirectional_mask(torch.zeros(3, dtype=torch.bool))


def test_collate_examples_right_pads_every_field():
    long = seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "causal", M)
    short_source = torch.tensor([SOS, A, EOS])
    short = seq2seq_layout.build_example(
        short_source, torch.tensor([X, EOS]), torch.ones(2, dtype=torch.bool), "causal", M
    )
    # long: S a b | E x y (6); short: S a | E x (4)
    batch = seq2seq_layout.collate_examples([long, short], PAD)
    assert batch["tokens"].tolist() == [[SOS, A, B, EOS, X, Y], [SOS, A, EOS, X, PAD, PAD]]
    assert batch["segments"].tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0]]
    assert batch["positions"].tolist() == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 0, 0]]
    assert batch["masked_tokens"].tolist() == [
        [False, False, False, True, True, True],
        [False, False, True, True, False, False],
    ]
    assert batch["attn_mask"].shape == (2, 6, 6)
    assert batch["attn_mask"][0].tolist() == long["visible"].tolist()
    assert (
        batch["attn_mask"][1].tolist()
        == as_mask(
            [
                # S  a  E  x  p  p
                [1, 1, 0, 0, 0, 0],
                [1, 1, 0, 0, 0, 0],
                [1, 1, 1, 0, 0, 0],  # the start token [EOS]
                [1, 1, 1, 1, 0, 0],
                [0, 0, 0, 0, 1, 0],  # padded query: itself only
                [0, 0, 0, 0, 0, 1],
            ]
        ).tolist()
    )


# ---------------------------------------------------------------------------------------------------
# UniLM v1 models: source segment 4, target segment 5 (Dong et al. 2019 §2.1, §2.5)

V1 = (4, 5)


def test_v1_pseudo_masked_layout_puts_4_on_the_source_and_5_on_targets_and_pseudo_masks():
    # the same example as above: only the segment ids change; [P] tokens are target side, so 5
    layout = seq2seq_layout.build_example(
        SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "pseudo_masked", M, segments=V1
    )
    assert layout["tokens"].tolist() == [SOS, A, B, EOS, X, Y, EOS, M, M, M]
    assert layout["segments"].tolist() == [4, 4, 4, 4, 5, 5, 5, 5, 5, 5]
    assert layout["positions"].tolist() == [0, 1, 2, 3, 4, 5, 6, 4, 5, 6]


def test_v1_masked_layout_gives_the_mask_tokens_segment_5():
    layout = seq2seq_layout.build_example(
        SOURCE, torch.tensor([X, M, M]), torch.tensor([False, True, True]), "masked", M, segments=V1
    )
    assert layout["tokens"].tolist() == [SOS, A, B, EOS, X, M, M]
    assert layout["segments"].tolist() == [4, 4, 4, 4, 5, 5, 5]


def test_v1_causal_layout_gives_the_start_token_segment_5():
    # "[SOS] a b" is the source (4); the start token [EOS], x and y are the target side (5)
    layout = seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "causal", M, V1)
    assert layout["tokens"].tolist() == [SOS, A, B, EOS, X, Y]
    assert layout["segments"].tolist() == [4, 4, 4, 5, 5, 5]


def test_v1_collate_pads_segments_with_the_source_segment():
    long = seq2seq_layout.build_example(SOURCE, TARGET, torch.ones(3, dtype=torch.bool), "causal", M, V1)
    short = seq2seq_layout.build_example(
        torch.tensor([SOS, A, EOS]), torch.tensor([X, EOS]), torch.ones(2, dtype=torch.bool), "causal", M, V1
    )
    batch = seq2seq_layout.collate_examples([long, short], PAD, segment_pad=4)
    assert batch["segments"].tolist() == [[4, 4, 4, 5, 5, 5], [4, 4, 5, 5, 4, 4]]


def test_segment_ids_follow_the_checkpoint_segment_table():
    # UniLM v1's six LM identifiers (or more) mean v1 pre-training; BERT's 2, RoBERTa's 1 or none do not
    assert seq2seq_layout.UNILM_V1_SEGMENTS == SEGMENT_IDS[SEQ2SEQ] == (4, 5)
    assert [seq2seq_layout.pretrained_segments(rows) for rows in (0, 1, 2, 5, 6, 8)] == [
        (0, 1), (0, 1), (0, 1), (0, 1), (4, 5), (4, 5)]  # fmt: skip
    assert seq2seq_layout.SEGMENT_CHOICES == {"0-1": (0, 1), "4-5": (4, 5)}


# ---------------------------------------------------------------------------------------------------
# the fine-tuning method: one enum, plain strings in configs and checkpoints


def test_finetune_method_members_equal_their_strings():
    FinetuneMethod = seq2seq_layout.FinetuneMethod
    assert [m.value for m in seq2seq_layout.METHODS] == ["causal", "masked", "pseudo_masked"]
    assert FinetuneMethod.CAUSAL == "causal" and "pseudo_masked" == FinetuneMethod.PSEUDO_MASKED
    assert FinetuneMethod("masked") is FinetuneMethod.MASKED
    assert str(FinetuneMethod.PSEUDO_MASKED) == "pseudo_masked" and f"{FinetuneMethod.MASKED}" == "masked"
    # the value of a config field typed with METHOD_CHOICES (fairseq's ChoiceEnum)
    assert FinetuneMethod(seq2seq_layout.METHOD_CHOICES("causal")) is FinetuneMethod.CAUSAL
    with pytest.raises(ValueError, match=r"unknown fine-tuning method 'bogus'; expected one of \['causal'"):
        FinetuneMethod("bogus")


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo_masked"])
def test_the_model_config_records_the_method_as_a_plain_string(method):
    """Checkpoints keep the method as a string (torch's weights-only loading accepts no enum class),
    and a config holding that string builds a model whose views hold the enum member."""
    from omegaconf import OmegaConf

    from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask

    from ..helpers.models import tiny_config

    task = UniLMSeq2SeqTask(UniLMSeq2SeqConfig(data="x", seed=1, finetune_method=method), make_dictionary())
    cfg = OmegaConf.structured(tiny_config(max_positions=512))
    cfg._name = "unilmv2"
    model = task.build_model(cfg)
    assert model.decoder.spec.method is model.encoder.spec.method is seq2seq_layout.FinetuneMethod(method)
    assert task._dataset(_Lines(), None).spec.method is seq2seq_layout.FinetuneMethod(method)
    saved = OmegaConf.to_container(model.cfg, enum_to_str=True)  # as fairseq's trainer saves it
    assert type(saved["seq2seq_method"]) is str and saved["seq2seq_method"] == method
    reloaded = task.build_model(OmegaConf.create(saved), from_checkpoint=True)
    assert reloaded.decoder.spec.method is seq2seq_layout.FinetuneMethod(method)


def test_the_spec_is_frozen_and_settles_the_method_once():
    from dataclasses import FrozenInstanceError

    Spec = seq2seq_layout.Seq2SeqSpec
    spec = Spec("causal", 32, 16, (4, 5))
    assert spec.method is seq2seq_layout.FinetuneMethod.CAUSAL and spec.causal
    assert (spec.max_source, spec.max_target, spec.segments) == (32, 16, (4, 5))
    assert (spec.source_segment, spec.target_segment) == (4, 5)
    assert Spec(seq2seq_layout.METHOD_CHOICES("masked")).method is seq2seq_layout.FinetuneMethod.MASKED
    with pytest.raises(FrozenInstanceError):
        spec.method = "masked"
    with pytest.raises(ValueError, match="unknown fine-tuning method 'bogus'"):
        Spec("bogus")


def test_the_spec_round_trips_through_a_model_config_and_reads_old_ones():
    from argparse import Namespace

    from omegaconf import OmegaConf

    Spec = seq2seq_layout.Seq2SeqSpec
    spec = Spec("masked", 40, 12, (4, 5))
    cfg = OmegaConf.create({"encoder_layers": 2})
    OmegaConf.set_struct(cfg, True)  # as fairseq hands a checkpoint's model config
    spec.record(cfg)
    saved = OmegaConf.to_container(cfg)
    assert saved["seq2seq_method"] == "masked" and type(saved["seq2seq_method"]) is str
    assert Spec.recorded(OmegaConf.create(saved)) == spec
    # a checkpoint from before the limits and segment ids were recorded
    old = Namespace(seq2seq_method="causal")
    assert Spec.recorded(old) == Spec("causal", 0, 0, seq2seq_layout.PAIR_SEGMENTS)
    assert Spec.recorded(Namespace()) == Spec()
    # its limits were the task's, which the checkpoint's task config holds
    saved = Namespace(model=old, task=Namespace(max_source_positions=100, max_target_positions=20))
    assert Spec.from_checkpoint(saved) == Spec("causal", 100, 20)
    saved.model = OmegaConf.create(OmegaConf.to_container(cfg))
    assert Spec.from_checkpoint(saved) == spec  # recorded limits win


class _Lines:
    """An empty indexed dataset."""

    sizes = []

    def __len__(self):
        return 0
