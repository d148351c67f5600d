"""``--amp-bf16`` in the tasks' training step and the precision checks, without the command line: which
step runs, the autocast it runs under, float32 weights and gradients, and each clear error."""

import copy

import pytest
import torch
from omegaconf import OmegaConf

from unilm_fairseq.tasks import mixed_precision
from unilm_fairseq.tasks.mixed_precision import (
    MixedPrecisionConfig,
    MixedPrecisionTask,
    check_bf16_device,
    check_precision_options,
)
from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig
from unilm_fairseq.tasks.pmlm import PMLMConfig
from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig


def config(**values):
    """A task config whose precision options read fairseq's ``common`` section, as in a full config."""
    common = {"fp16": False, "bf16": False, "amp": False, "tpu": False}
    common.update({k: values.pop(k) for k in list(values) if k in common})
    root = OmegaConf.create({"common": common, "task": OmegaConf.structured(MixedPrecisionConfig(**values))})
    return root.task


class BaseTask:
    """Stands in for ``FairseqTask``: records that its own step ran."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.base_steps = 0

    def build_criterion(self, cfg, from_checkpoint=False):
        return "criterion"

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        self.base_steps += 1
        return "base"


class Task(MixedPrecisionTask, BaseTask):
    pass


class Model(torch.nn.Linear):
    def set_num_updates(self, num_updates):
        self.num_updates = num_updates


class Optimizer:
    def backward(self, loss):
        loss.backward()


def criterion_recording(seen):
    def criterion(model, sample):
        seen["autocast"] = torch.is_autocast_enabled("cpu")
        seen["autocast_dtype"] = torch.get_autocast_dtype("cpu")
        out = model(sample)
        seen["output_dtype"] = out.dtype
        loss = out.float().pow(2).sum()
        return loss, 1, {"loss": loss.item()}

    return criterion


def test_the_option_is_in_the_tasks_configs():
    for cfg in (PMLMConfig, UniLMSeq2SeqConfig, PALMSeq2SeqConfig):
        assert cfg.__dataclass_fields__["amp_bf16"].default is False


@pytest.mark.parametrize("amp_bf16", [False, True])
def test_train_step_autocasts_to_bfloat16_only_with_the_option(amp_bf16):
    task = Task(config(amp_bf16=amp_bf16))
    torch.manual_seed(0)
    model, sample, seen = Model(8, 4), torch.randn(3, 8), {}
    reference = copy.deepcopy(model)
    result = task.train_step(sample, model, criterion_recording(seen), Optimizer(), update_num=5)
    if not amp_bf16:
        assert result == "base" and task.base_steps == 1 and not seen
        return
    assert task.base_steps == 0 and model.num_updates == 5 and model.training
    assert seen == {"autocast": True, "autocast_dtype": torch.bfloat16, "output_dtype": torch.bfloat16}
    assert not torch.is_autocast_enabled("cpu")  # left as it was found
    # the weights and their gradients stay float32: the float32 gradients up to bfloat16 rounding
    assert model.weight.dtype == model.weight.grad.dtype == torch.float32
    criterion_recording({})(reference, sample)[0].backward()
    assert torch.isfinite(model.weight.grad).all()
    assert torch.allclose(model.weight.grad, reference.weight.grad, rtol=2e-2, atol=1e-2)
    assert not torch.equal(model.weight.grad, reference.weight.grad)  # bfloat16 did compute


def test_ignore_grad_zeroes_the_gradients():
    task = Task(config(amp_bf16=True))
    model = Model(8, 4)
    task.train_step(torch.randn(3, 8), model, criterion_recording({}), Optimizer(), 0, ignore_grad=True)
    assert torch.equal(model.weight.grad, torch.zeros_like(model.weight))


def test_tpu_without_torch_xla_names_amp_bf16(monkeypatch):
    monkeypatch.setattr(mixed_precision.importlib.util, "find_spec", lambda name: None)
    task = Task(config(bf16=True, tpu=True))  # set up, as for decoding: no error
    with pytest.raises(ValueError, match="torch_xla is not installed.*use --amp-bf16 instead"):
        task.build_criterion(None)  # as fairseq-train does before its trainer
    assert Task(config(bf16=True)).build_criterion(None) == "criterion"  # Hydra's bf16 alone: fairseq's


@pytest.mark.parametrize("other, option", [("bf16", "--bf16"), ("fp16", "--fp16"), ("amp", "--amp")])
def test_amp_bf16_with_another_precision_option(other, option):
    with pytest.raises(ValueError, match=f"--amp-bf16 cannot be combined with {option}:"):
        check_precision_options(config(amp_bf16=True, **{other: True}))
    check_precision_options(config(**{other: True}))  # each alone is fairseq's business


def test_configs_outside_a_full_config_pass():
    # a task config built on its own: the common section's values cannot be resolved
    check_precision_options(OmegaConf.structured(MixedPrecisionConfig(amp_bf16=True)))
    check_precision_options(MixedPrecisionConfig())
    check_precision_options(OmegaConf.create({"data": "x"}))  # a checkpoint's config from before the option


def test_gpu_without_bfloat16_is_a_clear_error(monkeypatch):
    check_bf16_device("cpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    with pytest.raises(RuntimeError, match="does not support bfloat16; use --amp"):
        check_bf16_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    check_bf16_device("cuda")
