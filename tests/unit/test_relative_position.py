"""T5-style bidirectional relative position buckets (docs/masks.md section 7) and the per-head bias table."""

import math

import pytest
import torch

from unilm_fairseq.modules.relative_position import RelativePositionBias, relative_position_bucket

# Distance d = key position - query position, num_buckets=32, max_distance=128.
# Keys at or before the query (d <= 0) use buckets 0..15, keys after it (d > 0) use 16..31.
# Inside a half: |d| < 8 is its own bucket; otherwise bucket = 8 + floor(log(|d|/8) / log(16) * 8)
# = 8 + floor(2 * log2(|d| / 8)), clamped to 15. It steps up where |d| = 8 * 2**(k/2):
# 11.31 (-> 9 from 12), 16 (-> 10), 22.63 (-> 11 from 23), 32 (-> 12), 45.25 (-> 13 from 46),
# 64 (-> 14), 90.51 (-> 15 from 91), 128 (-> 16, clamped to 15).
# At the exact powers 16, 32, 64 and 128 the float32 computation gives exactly 2.0, 4.0, 6.0 and 8.0
# (checked by running it), so the implementation agrees with exact arithmetic at every boundary.
HALF_TABLE = [  # (smallest |d|, largest |d|, bucket inside the half)
    (0, 0, 0),
    (1, 1, 1),
    (2, 2, 2),
    (3, 3, 3),
    (4, 4, 4),
    (5, 5, 5),
    (6, 6, 6),
    (7, 7, 7),
    (8, 11, 8),
    (12, 15, 9),
    (16, 22, 10),
    (23, 31, 11),
    (32, 45, 12),
    (46, 63, 13),
    (64, 90, 14),
    (91, 200, 15),  # 128 and beyond share the last bucket
]


def expected_bucket(distance: int) -> int:
    for low, high, bucket in HALF_TABLE:
        if low <= abs(distance) <= high:
            return bucket + (16 if distance > 0 else 0)
    raise AssertionError(f"distance {distance} missing from the table")


def test_table_covers_every_distance_once():
    covered = [d for low, high, _ in HALF_TABLE for d in range(low, high + 1)]
    assert covered == list(range(0, 201))


def test_every_distance_from_minus_200_to_200():
    distances = torch.arange(-200, 201)
    buckets = relative_position_bucket(distances, num_buckets=32, max_distance=128)
    assert buckets.dtype == torch.long
    mismatches = [
        (d, b, expected_bucket(d))
        for d, b in zip(distances.tolist(), buckets.tolist())
        if b != expected_bucket(d)
    ]
    assert mismatches == []


def test_spot_values_and_defaults():
    distances = torch.tensor([0, -1, 1, -7, 7, -8, 8, -127, 127, -128, 128, -10_000, 10_000])
    assert relative_position_bucket(distances).tolist() == [0, 1, 17, 7, 23, 8, 24, 15, 31, 15, 31, 15, 31]


def test_keeps_shape_and_range():
    relative = torch.arange(-300, 300).view(4, 25, 6)
    buckets = relative_position_bucket(relative)
    assert buckets.shape == relative.shape
    assert int(buckets.min()) == 0 and int(buckets.max()) == 31
    # bucket 16 would be "distance 0, key after the query", which cannot happen (never used)
    assert set(buckets.unique().tolist()) == set(range(32)) - {16}


def scalar_bucket(distance: int, num_buckets: int, max_distance: int) -> int:
    """The rule in words, one distance at a time in float64 Python arithmetic.

    Half the buckets for keys at or before the query, half for keys after; inside a half, exact
    buckets below ``half // 2``, then log-spaced up to ``max_distance``, then the half's last bucket.
    """
    half = num_buckets // 2
    exact = half // 2
    n = abs(distance)
    if n < exact:
        inside = n
    else:
        inside = min(
            half - 1, exact + int(math.log(n / exact) / math.log(max_distance / exact) * (half - exact))
        )
    return inside + (half if distance > 0 else 0)


def test_matches_the_rule_for_other_settings():
    distances = torch.arange(-1100, 1101)
    for num_buckets, max_distance in [(32, 128), (16, 64), (64, 256), (32, 1000)]:
        expected = [scalar_bucket(d, num_buckets, max_distance) for d in distances.tolist()]
        got = relative_position_bucket(distances, num_buckets, max_distance).tolist()
        assert got == expected, (num_buckets, max_distance)


def test_bias_shape_is_batch_heads_queries_keys():
    torch.manual_seed(0)
    bias = RelativePositionBias(num_heads=3)
    out = bias(torch.arange(4).expand(2, 4), torch.arange(5).expand(2, 5))
    assert out.shape == (2, 3, 4, 5)


def test_equal_relative_distances_get_equal_bias():
    torch.manual_seed(0)
    module = RelativePositionBias(num_heads=3)
    query = torch.tensor([[0, 1, 2, 3], [10, 11, 12, 13]])  # second example: everything shifted by 10
    key = torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]])
    out = module(query, key)  # 2 x 3 x 4 x 5
    # translation invariance across the batch
    assert torch.equal(out[0], out[1])
    # within an example, every (t, s) with the same s - t carries the same bias
    for offset in range(-3, 5):
        diagonal = torch.diagonal(out[0], offset=offset, dim1=-2, dim2=-1)  # 3 x n
        assert torch.equal(diagonal, diagonal[:, :1].expand_as(diagonal)), offset
    # and distinct distances read distinct table rows (random init: rows differ)
    assert not torch.equal(out[0, :, 0, 0], out[0, :, 0, 1])


def test_bias_reads_table_row_of_key_minus_query():
    torch.manual_seed(0)
    module = RelativePositionBias(num_heads=2)
    out = module(torch.tensor([[5]]), torch.tensor([[4, 5, 6, 100]]))  # 1 x 2 x 1 x 4
    table = module.table.weight  # buckets x heads
    # key 4 is one before the query (bucket 1); key 6 one after (bucket 17); key 100 is 95 after (bucket 31)
    assert torch.equal(out[0, :, 0, 0], table[1])
    assert torch.equal(out[0, :, 0, 1], table[0])
    assert torch.equal(out[0, :, 0, 2], table[17])
    assert torch.equal(out[0, :, 0, 3], table[31])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_table_gradient_is_the_sum_per_bucket(dtype):
    """On CPU the bias table's gradient is summed per query row, then over rows, in float32: the same
    lookup as nn.Embedding's, and a gradient closer to the float64 sum per bucket than its backward."""
    torch.manual_seed(0)
    bias = RelativePositionBias(num_heads=4, num_buckets=32, max_distance=128).to(dtype)
    queries, keys = torch.randint(0, 300, (3, 40)), torch.randint(0, 300, (3, 50))
    grad = torch.randn(3, 4, 40, 50).to(dtype)
    out = bias(queries, keys)
    out.backward(grad)
    got = bias.table.weight.grad.clone()
    bias.zero_grad()
    buckets = relative_position_bucket(keys.unsqueeze(1) - queries.unsqueeze(2), 32, 128)
    expected = bias.table(buckets).permute(0, 3, 1, 2)
    expected.backward(grad)
    assert torch.equal(out, expected)
    assert got.dtype == dtype and got.abs().sum() > 0
    rows = grad.permute(0, 2, 3, 1).reshape(-1, 4).double()  # one per bucket id

    def per_bucket(values):
        return torch.zeros(32, 4, dtype=torch.float64).index_add_(0, buckets.flatten(), values)

    exact, magnitude = per_bucket(rows), per_bucket(rows.abs())
    # float32 sums at most (50 keys + 120 rows) deep, then one rounding to the table's dtype
    bound = 170 * torch.finfo(torch.float32).eps * magnitude + torch.finfo(dtype).eps * exact.abs()
    assert ((got.double() - exact).abs() <= bound).all()
    embedding = (bias.table.weight.grad.double() - exact).abs().max()
    assert (got.double() - exact).abs().max() <= embedding


@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (16, 64), (64, 256), (32, 1000), (8, 5)])
def test_module_buckets_are_the_rule_for_every_distance(num_buckets, max_distance):
    """The module looks buckets up in a table of the distances up to max_distance, clamped: the same
    ids as the rule for every distance, far past max_distance included."""
    module = RelativePositionBias(num_heads=2, num_buckets=num_buckets, max_distance=max_distance)
    queries = torch.arange(0, 2500, 7).view(1, -1)
    keys = torch.arange(0, 2500, 5).view(1, -1)
    expected = relative_position_bucket(keys.unsqueeze(1) - queries.unsqueeze(2), num_buckets, max_distance)
    assert torch.equal(module.buckets(queries, keys), expected)
    assert "distance_buckets" not in module.state_dict()  # rebuilt, never saved
