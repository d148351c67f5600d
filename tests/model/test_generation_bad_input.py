"""Generation and scoring requests that cannot be honoured are a ``ValueError`` naming the option, alike for
the UniLM and the PALM interface and before any search starts: fairseq would assert inside the search or
its batching, or stop with advice about a command-line flag."""

import argparse

import pytest
import torch

from unilm_fairseq import UniLMModel
from unilm_fairseq.tasks.decoding_conventions import check_generation_options

from ..helpers.hub import CHECKPOINT, palm_hub, palm_task, save_seq2seq_checkpoint
from ..helpers.palm import palm_model
from ..helpers.seq2seq import SOURCES, TARGETS, D, sharpened_model

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"beam": 5, "nbest": 6}, r"--nbest 6 needs 1 <= nbest <= --beam \(5\)"),
        ({"beam": 0}, "--beam 0: needs at least 1"),
        ({"temperature": 0.0}, "--temperature 0.0: must be above 0"),
        ({"min_len": 4, "max_len_b": 3}, r"--min-len 4 is above the longest output allowed"),
    ],
)
def test_check_generation_options(options, message):
    args = argparse.Namespace(**{"beam": 5, "nbest": 1, "temperature": 1.0, "min_len": 1, "max_len_b": 200,
                                 "max_len_a": 0, **options})  # fmt: skip
    with pytest.raises(ValueError, match=message):
        check_generation_options(args)


def test_good_generation_options_pass():
    check_generation_options(argparse.Namespace(beam=5, nbest=5, temperature=0.5, min_len=3, max_len_a=0,
                                                max_len_b=3))  # fmt: skip
    check_generation_options(argparse.Namespace(beam=1, nbest=1, min_len=30, max_len_a=1.0, max_len_b=0))


@pytest.fixture(scope="module")
def hubs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unilm")
    save_seq2seq_checkpoint(folder, sharpened_model(D, "pseudo_masked"))
    return {
        "unilm": UniLMModel.from_pretrained(str(folder), CHECKPOINT),
        "palm": palm_hub(palm_model(D, no_encoder_mlm_head=True), palm_task(D)),
    }


@pytest.mark.parametrize("name", ["unilm", "palm"])
@pytest.mark.parametrize(
    "options, message",
    [
        # with --max-len-a the limit depends on the batch's sources: checked per batch, before its search
        (
            {"min_len": 30, "max_len_a": 1, "max_len_b": 0},
            r"--min-len 30 cannot be met: sources of \d+ tokens",
        ),
        ({"temperature": 0, "max_len_b": 3}, "--temperature 0.0: must be above 0"),
        ({"max_tokens": 1, "max_len_b": 3}, r"max_tokens=1 is below the longest input's \d+ tokens"),
        ({"beam": 2, "nbest": 3}, r"nbest=3 needs 1 <= nbest <= beam \(beam=2\)"),
    ],
)
def test_impossible_requests_are_value_errors(hubs, name, options, message):
    with pytest.raises(ValueError, match=message):
        hubs[name].generate(list(SOURCES[:2]), **options)


def test_the_same_request_within_limits_generates(hubs):
    for hub in hubs.values():
        hypotheses = hub.generate(list(SOURCES[:2]), min_len=2, max_len_a=1, max_len_b=0, max_tokens=64)
        assert len(hypotheses) == 2 and all(len(h[0]["tokens"]) >= 3 for h in hypotheses)  # 2 + </s>


def test_palm_inputs_past_its_positions_are_named(hubs):
    palm = hubs["palm"]
    source_limit, target_limit = palm.max_positions
    long_source = torch.cat([SOURCES[0][:-1]] * source_limit)[:source_limit]
    long_source = torch.cat([long_source, SOURCES[0][-1:]])  # source_limit + 1 tokens, ending with </s>
    long_target = torch.cat([TARGETS[0][:-1]] * target_limit)[:target_limit]
    long_target = torch.cat([long_target, TARGETS[0][-1:]])
    with pytest.raises(
        ValueError, match=rf"sources \[1\] are longer than the model's {source_limit} positions"
    ):
        palm.generate([SOURCES[0], long_source], max_len_b=3)
    with pytest.raises(
        ValueError, match=rf"targets \[0\] are longer than the model's {target_limit} positions"
    ):
        palm.score([SOURCES[0]], [long_target])
    with pytest.raises(
        ValueError, match=rf"sources \[0\] are longer than the model's {source_limit} positions"
    ):
        palm.score([long_source], [TARGETS[0]])
    with pytest.raises(
        ValueError, match=rf"tokens \[0\] are longer than the model's {source_limit} positions"
    ):
        palm.extract_features(long_source)
    full = torch.cat([long_source[: source_limit - 1], SOURCES[0][-1:]])  # exactly the limit: accepted
    assert len(palm.generate([full], max_len_b=3)[0]) == 1
    assert palm.extract_features(full).shape[:2] == (1, source_limit)
