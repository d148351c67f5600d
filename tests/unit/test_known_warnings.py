"""The plugin silences exactly the warnings of ``known_warnings.KNOWN_WARNINGS``, and only those.

Each filter must match its category, its message and the module that raises it; a warning that differs in
any one of them still reaches the user. And against the installed fairseq, Hydra and torch: the Hydra
configuration every fairseq command builds, and a CPU DataLoader that asks for pinned memory, raise
warnings without the plugin's filters and none with them (a library that rewords its warning fails here,
not on the main job's console).
"""

import json
import os
import subprocess
import sys
import warnings

import pytest

from tests.helpers.cli import REPO
from unilm_fairseq.known_warnings import KNOWN_WARNINGS, quiet_known_warnings

# a message each known warning's pattern matches, and a module name that raises it
RAISED = {
    r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental": (
        "hydra.experimental.initialize() is no longer experimental. Use hydra.initialize()",
        "hydra.experimental.initialize",
    ),
    r"\s*The version_base parameter is not specified": (
        "\nThe version_base parameter is not specified.\nPlease specify a compatability version level",
        "hydra.experimental.initialize",
    ),
    r"In 'config': Usage of deprecated keyword in package header '# @package _group_'": (
        "In 'config': Usage of deprecated keyword in package header '# @package _group_'.",
        "hydra._internal.defaults_list",
    ),
    r"\s*'config' is validated against ConfigStore schema with the same name": (
        "\n'config' is validated against ConfigStore schema with the same name.",
        "hydra._internal.config_loader_impl",
    ),
    r"\s*The strict flag in the compose API is deprecated": (
        "\nThe strict flag in the compose API is deprecated.",
        "hydra.experimental.compose",
    ),
    r"'pin_memory' argument is set as true but no accelerator is found": (
        "'pin_memory' argument is set as true but no accelerator is found, "
        "then device pinned memory won't be used.",
        "torch.utils.data.dataloader",
    ),
    r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated": (
        "`torch.cuda.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cuda', args...)` instead.",
        "fairseq.trainer",
    ),
    r"Support for mismatched key_padding_mask and attn_mask is deprecated": (
        "Support for mismatched key_padding_mask and attn_mask is deprecated. "
        "Use same type for both instead.",
        "torch.nn.functional",
    ),
}


def shown(category, message, module):
    """Whether a warning raised by ``module`` reaches the user once the plugin's filters are in place."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_known_warnings()
        warnings.warn_explicit(message, category, "somewhere.py", 1, module=module)
    return bool(caught)


def test_every_known_warning_has_a_sample():
    assert sorted(RAISED) == sorted(known.message for known in KNOWN_WARNINGS)


@pytest.mark.parametrize("known", KNOWN_WARNINGS, ids=lambda known: known.message[:40])
def test_a_known_warning_is_silenced_and_its_neighbours_are_not(known):
    message, module = RAISED[known.message]
    assert not shown(known.category, message, module)
    other = RuntimeWarning if known.category is not RuntimeWarning else UserWarning
    assert shown(other, message, module), "another category with the same text is hidden"
    assert shown(known.category, "something else went wrong: " + message, module), "another text is hidden"
    if known.module:
        assert shown(known.category, message, "my_project.train"), (
            "the same text from another module is hidden"
        )


# run in a fresh interpreter: the fairseq configuration every command builds, and a CPU DataLoader asking
# for pinned memory; print the warnings raised (the plugin's filters taken out again with QUIET=0)
PROBE = """
import json, os, sys, warnings
warnings.simplefilter("always")
import torch
import unilm_fairseq
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
if os.environ["QUIET"] == "0":
    warnings.resetwarnings()
    warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, ["data", "--task", "unilm_seq2seq", "--arch", "unilmv2_base", "--criterion", "unilm_seq2seq",
                 "--optimizer", "adam", "--lr", "1e-4", "--cpu"])
    convert_namespace_to_omegaconf(args)
    if not torch.cuda.is_available():
        list(torch.utils.data.DataLoader([1, 2], pin_memory=True))
    # fairseq's decoder self-attention (PALM's decoder): a float future mask beside a bool padding mask
    from fairseq.modules import MultiheadAttention
    x = torch.randn(3, 2, 8)
    future = torch.triu(torch.full((3, 3), float("-inf")), 1)
    padding = torch.tensor([[False, False, False], [False, False, True]])
    MultiheadAttention(8, 2, self_attention=True)(x, x, x, key_padding_mask=padding, attn_mask=future)
print(json.dumps([f"{w.category.__name__}: {str(w.message).strip()}" for w in caught]))
"""


def probe(quiet):
    env = dict(os.environ, QUIET=quiet, PYTHONPATH=REPO)
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fairseq_configuration_and_cpu_loading_raise_no_warning_with_the_plugin():
    assert probe("1") == []


def test_without_the_filters_the_same_steps_do_warn():
    """The check above can fail: the libraries still raise what the filters are for."""
    raised = probe("0")
    assert any("version_base" in w for w in raised), raised
    assert any("no longer experimental" in w for w in raised), raised
    assert any("mismatched key_padding_mask" in w for w in raised), raised
    if not __import__("torch").cuda.is_available():
        assert any("pin_memory" in w for w in raised), raised
