"""Hand-checked attention masks for every layout (DESIGN.md section 5).

Every expected matrix is written out literally, one row per query and one column per key
(1 = the query may attend the key), and was derived by hand from the rule quoted above it.
"""

import pytest
import torch

from unilm_fairseq.masks import (
    bidirectional_mask,
    left_to_right_mask,
    pad_masks,
    pmlm_mask,
    pseudo_masked_seq2seq_mask,
    right_to_left_mask,
    seq2seq_mask,
)


def as_mask(rows):
    """Literal 0/1 rows -> (L, L) bool tensor."""
    return torch.tensor(rows, dtype=torch.bool)


def assert_mask(actual, rows):
    assert actual.dtype == torch.bool
    assert actual.shape == (len(rows), len(rows))
    assert actual.tolist() == as_mask(rows).tolist()


def test_bidirectional_every_token_sees_every_token():
    assert_mask(
        bidirectional_mask(3),
        [
            [1, 1, 1],
            [1, 1, 1],
            [1, 1, 1],
        ],
    )


def test_left_to_right_sees_itself_and_earlier_keys():
    assert_mask(
        left_to_right_mask(4),
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 1],
        ],
    )


def test_right_to_left_sees_itself_and_later_keys():
    assert_mask(
        right_to_left_mask(4),
        [
            [1, 1, 1, 1],
            [0, 1, 1, 1],
            [0, 0, 1, 1],
            [0, 0, 0, 1],
        ],
    )


def test_seq2seq_source_sees_source_target_sees_source_and_earlier_targets():
    # layout: s0 s1 | t0 t1 t2
    assert_mask(
        seq2seq_mask(2, 3),
        [
            # s0 s1 t0 t1 t2
            [1, 1, 0, 0, 0],  # s0: whole source, no target
            [1, 1, 0, 0, 0],  # s1
            [1, 1, 1, 0, 0],  # t0: source, t0
            [1, 1, 1, 1, 0],  # t1: source, t0 t1
            [1, 1, 1, 1, 1],  # t2: source, t0 t1 t2
        ],
    )


def test_seq2seq_empty_target_is_bidirectional_source():
    assert_mask(seq2seq_mask(2, 0), [[1, 1], [1, 1]])


def test_pseudo_masked_seq2seq_whole_matrix():
    # layout: s0 s1 | t0 t1 | p0 p1
    # pseudo j sees the whole source, targets < j and itself; only itself sees a pseudo token
    assert_mask(
        pseudo_masked_seq2seq_mask(2, 2),
        [
            # s0 s1 t0 t1 p0 p1
            [1, 1, 0, 0, 0, 0],  # s0
            [1, 1, 0, 0, 0, 0],  # s1
            [1, 1, 1, 0, 0, 0],  # t0
            [1, 1, 1, 1, 0, 0],  # t1
            [1, 1, 0, 0, 1, 0],  # p0: source, no target, itself
            [1, 1, 1, 0, 0, 1],  # p1: source, t0, itself
        ],
    )


def test_pmlm_whole_matrix_span_step_then_single_step():
    # context: c0 c1 c2 (unmasked tokens and [M]); step 1 is a span of two masked tokens a, b;
    # step 2 is one masked token c. Appended: [P]a [P]b a b (step 1), then [P]c c (step 2).
    step = torch.tensor([1, 1, 1, 1, 2, 2])
    is_pseudo = torch.tensor([True, True, False, False, True, False])
    assert_mask(
        pmlm_mask(3, step, is_pseudo),
        [
            # c0 c1 c2 Pa Pb  a  b Pc  c
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c0: context only
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c1
            [1, 1, 1, 0, 0, 0, 0, 0, 0],  # c2
            [
                1,
                1,
                1,
                1,
                1,
                0,
                0,
                0,
                0,
            ],  # [P]a: context, the [P]s of step 1, no originals (none before step 1)
            [1, 1, 1, 1, 1, 0, 0, 0, 0],  # [P]b
            [1, 1, 1, 0, 0, 1, 1, 0, 0],  # a: context, originals of steps <= 1
            [1, 1, 1, 0, 0, 1, 1, 0, 0],  # b
            [1, 1, 1, 0, 0, 1, 1, 1, 0],  # [P]c: context, originals of step 1, itself
            [1, 1, 1, 0, 0, 1, 1, 0, 1],  # c: context, originals of steps <= 2
        ],
    )


def test_pmlm_uses_step_ids_not_layout_order():
    # the same two steps with step 2's block appended first: visibility follows the step ids
    step = torch.tensor([2, 2, 1, 1])
    is_pseudo = torch.tensor([True, False, True, False])
    assert_mask(
        pmlm_mask(1, step, is_pseudo),
        [
            # c P2 o2 P1 o1
            [1, 0, 0, 0, 0],  # c
            [1, 1, 0, 0, 1],  # [P] of step 2: context, itself, original of step 1
            [1, 0, 1, 0, 1],  # original of step 2: context, originals of steps <= 2
            [1, 0, 0, 1, 0],  # [P] of step 1: context, itself
            [1, 0, 0, 0, 1],  # original of step 1: context, itself
        ],
    )


def test_pmlm_without_appended_tokens_is_bidirectional_context():
    empty = torch.zeros(0, dtype=torch.long)
    assert_mask(pmlm_mask(2, empty, empty.bool()), [[1, 1], [1, 1]])


def test_pad_masks_padded_keys_invisible_padded_query_sees_itself():
    batch = pad_masks([left_to_right_mask(2), bidirectional_mask(3)], length=4)
    assert batch.shape == (2, 4, 4) and batch.dtype == torch.bool
    assert_mask(
        batch[0],
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 0, 1, 0],  # padded query: itself only
            [0, 0, 0, 1],
        ],
    )
    assert_mask(
        batch[1],
        [
            [1, 1, 1, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 0],
            [0, 0, 0, 1],
        ],
    )


def test_pad_masks_default_length_is_longest():
    batch = pad_masks([bidirectional_mask(1), right_to_left_mask(3)])
    assert batch.shape == (2, 3, 3)
    assert_mask(batch[0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert_mask(batch[1], [[1, 1, 1], [0, 1, 1], [0, 0, 1]])


def test_pad_masks_of_nothing_is_empty_batch():
    assert pad_masks([]).shape == (0, 0, 0)


@pytest.mark.parametrize(
    "build",
    [
        lambda: bidirectional_mask(-1),
        lambda: left_to_right_mask(-2),
        lambda: right_to_left_mask(2.0),
        lambda: seq2seq_mask(-1, 3),
        lambda: seq2seq_mask(2, 1.5),
        lambda: pseudo_masked_seq2seq_mask(2, -1),
        lambda: pseudo_masked_seq2seq_mask(True, 2),
        lambda: pmlm_mask(-1, torch.tensor([1]), torch.tensor([True])),
        lambda: pmlm_mask(3.0, torch.tensor([1]), torch.tensor([True])),
    ],
)
def test_bad_lengths_raise(build):
    with pytest.raises(ValueError, match="non-negative int"):
        build()


def test_pmlm_length_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        pmlm_mask(3, torch.tensor([1, 1]), torch.tensor([True, False, False]))


def test_pmlm_rejects_non_1d_steps():
    with pytest.raises(ValueError, match=r"\(1, 2\) and \(2,\)"):
        pmlm_mask(3, torch.tensor([[1, 1]]), torch.tensor([True, False]))


def test_pmlm_steps_start_at_one():
    with pytest.raises(ValueError, match="start at 1"):
        pmlm_mask(3, torch.tensor([0, 1]), torch.tensor([True, False]))


def test_pad_length_shorter_than_longest_raises():
    with pytest.raises(ValueError, match="shorter than the longest"):
        pad_masks([bidirectional_mask(3), bidirectional_mask(2)], length=2)


def test_pad_masks_rejects_non_square_mask():
    with pytest.raises(ValueError, match=r"mask 1 must be square.*\(2, 3\)"):
        pad_masks([bidirectional_mask(2), torch.ones(2, 3, dtype=torch.bool)])
