"""The Python API's fairseq hub conventions on tiny checkpoints: ``score()`` equal to the training forward
of each fine-tuning method (and of PALM's), ``generate`` with ``nbest``, dtype and device moves of the
``nn.Module``, and one interface from both ``from_pretrained``.

The checkpoints are tiny untrained models saved as ``fairseq-train --task unilm_seq2seq`` saves them
(``tests/helpers/hub.py``); their training pairs are binarized beside them, so the task's own
``load_dataset`` and criterion give the training forward.
"""

import pytest
import torch
import torch.nn.functional as F
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from torch import nn

from unilm_fairseq import UniLMHubInterface, UniLMModel
from unilm_fairseq.criterions.unilm_seq2seq import UniLMSeq2SeqCriterion
from unilm_fairseq.models.unilmv2 import UniLMv2Model
from unilm_fairseq.seq2seq_layout import METHODS

from ..helpers.hub import CHECKPOINT, palm_hub, palm_task, save_seq2seq_checkpoint, write_pairs
from ..helpers.palm import palm_model
from ..helpers.seq2seq import EOS, MASK, SOURCES, TARGETS, D, sharpened_model

pytestmark = pytest.mark.usefixtures("one_thread")

TOL = 1e-5  # score() against the training forward
DECODING_TOL = 1e-5  # against cached decoding (measured 7e-7 on CPU)
MAX_LEN_B = 6


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """One checkpoint folder per fine-tuning method, with the pairs binarized as its ``train`` split."""
    root = tmp_path_factory.mktemp("hub")
    found = {}
    for method in METHODS:
        folder = root / method.value
        save_seq2seq_checkpoint(folder, sharpened_model(D, method.value))
        write_pairs(folder, "train", SOURCES, TARGETS, D)
        found[method.value] = folder
    return found


@pytest.fixture(scope="module")
def hubs(folders):
    return {method: UniLMModel.from_pretrained(str(folder), CHECKPOINT) for method, folder in folders.items()}


def training_forward_log_probs(hub):
    """Per pair, the log-probability of each target token from the task's training data and forward, and
    the criterion's summed loss over all of them.

    Causal and pseudo-masked: the ``train`` split's batch as the task builds it (no target noise by
    default). Masked: per target position ``j``, the training example whose only ``[M]`` is at ``j`` (the
    context decoding gives ``t_j``), through the same collater and criterion.
    """
    task, model = hub.task, hub.model
    dataset = task.load_dataset("train")
    criterion = UniLMSeq2SeqCriterion(task, label_smoothing=0.0)
    items = [dataset[i] for i in range(len(dataset))]
    assert [item["target"].tolist() for item in items] == [t.tolist() for t in TARGETS]
    if task.seq2seq_spec.method.value != "masked":
        batches = [dataset.collater(items)]
    else:
        batches = []
        for j in range(max(len(t) for t in TARGETS)):
            rows = []
            for item in items:
                if j < len(item["target"]):
                    inputs = item["target"].clone()
                    inputs[j] = MASK
                    predict = torch.arange(len(inputs)) == j
                    rows.append({**item, "target_inputs": inputs, "predict": predict})
            batches.append(dataset.collater(rows))
    per_pair = [[] for _ in items]
    loss = 0.0
    with torch.no_grad():
        for batch in batches:
            loss += float(criterion(model, batch)[0])
            logits, _ = model(**batch["net_input"])  # the criterion's call
            queries = batch["net_input"]["masked_tokens"]
            gold = batch["layout_target"][queries]
            picked = F.log_softmax(logits.float(), -1).gather(1, gold[:, None]).squeeze(1)
            for pair, lp in zip(batch["id"].tolist(), picked.split(queries.sum(1).tolist())):
                per_pair[pair].append(lp)
    return [torch.cat(lp) for lp in per_pair], loss


@pytest.mark.parametrize("method", [m.value for m in METHODS])
def test_score_equals_the_training_forward(hubs, method):
    hub = hubs[method]
    expected, loss = training_forward_log_probs(hub)
    scored = hub.score(SOURCES, TARGETS, batch_size=2)
    for result, target, reference in zip(scored, TARGETS, expected):
        assert result["tokens"].tolist() == target.tolist()
        assert result["positional_scores"].shape == target.shape
        torch.testing.assert_close(result["positional_scores"], reference, atol=TOL, rtol=0)
        assert float(result["log_prob"]) == pytest.approx(float(reference.sum()), abs=TOL * len(target))
        assert float(result["score"]) == pytest.approx(float(reference.mean()), abs=TOL)
    assert -sum(float(r["log_prob"]) for r in scored) == pytest.approx(loss, abs=1e-4)
    # the scores tell targets apart: another pairing scores differently
    swapped = hub.score(SOURCES, TARGETS[1:] + TARGETS[:1])
    assert all(abs(float(a["score"] - b["score"])) > 1e-3 for a, b in zip(scored[1:], swapped))


@pytest.mark.parametrize("method", [m.value for m in METHODS])
def test_score_equals_the_scores_of_generated_hypotheses(hubs, method):
    hub = hubs[method]
    hypotheses = hub.generate(list(SOURCES), beam=4, nbest=3, max_len_b=MAX_LEN_B)
    assert [len(h) for h in hypotheses] == [3] * len(SOURCES)
    sources = [s for s, hypos in zip(SOURCES, hypotheses) for _ in hypos]
    targets = [h["tokens"] for hypos in hypotheses for h in hypos]
    scored = hub.score(sources, targets)
    for result, hypo in zip(scored, (h for hypos in hypotheses for h in hypos)):
        torch.testing.assert_close(
            result["positional_scores"], hypo["positional_scores"].cpu(), atol=DECODING_TOL, rtol=0
        )
        # without a length penalty (lenpen 1, fairseq's style) a hypothesis' score is the mean
        assert float(result["score"]) == pytest.approx(float(hypo["score"]), abs=DECODING_TOL)


def test_score_input_forms_and_errors(hubs):
    hub = hubs["pseudo_masked"]
    texts = [hub.string(s) for s in SOURCES], [hub.string(t) for t in TARGETS]
    by_ids = hub.score(SOURCES, TARGETS)
    by_text = hub.score(*texts, batch_size=1)
    for a, b in zip(by_ids, by_text):
        assert a["tokens"].tolist() == b["tokens"].tolist()
        torch.testing.assert_close(a["positional_scores"], b["positional_scores"], atol=1e-6, rtol=0)
    one = hub.score(texts[0][1], TARGETS[1])
    assert isinstance(one, dict)
    torch.testing.assert_close(one["positional_scores"], by_ids[1]["positional_scores"], atol=1e-6, rtol=0)
    assert float(one["log_prob"]) == pytest.approx(float(one["positional_scores"].sum()), abs=1e-6)
    assert hub.score([], []) == []
    with pytest.raises(ValueError, match="as many targets as sources"):
        hub.score(SOURCES, TARGETS[:2])
    with pytest.raises(ValueError, match=r"targets\[0\] does not end with </s>"):
        hub.score(SOURCES[:1], [TARGETS[0][:-1]])
    with pytest.raises(TypeError, match="1-D tensor of ids"):
        hub.score(SOURCES[:1], [TARGETS[0].float()])
    too_long = torch.cat([torch.full((16,), int(TARGETS[0][0])), torch.tensor([EOS])])
    with pytest.raises(ValueError, match="longer than max_target_positions=16"):
        hub.score(SOURCES[:1], [too_long])


def test_generate_nbest(hubs):
    hub = hubs["causal"]
    texts = [hub.string(s) for s in SOURCES]
    best = hub.generate(texts, beam=4, max_len_b=MAX_LEN_B)
    nbest = hub.generate(texts, beam=4, nbest=3, max_len_b=MAX_LEN_B)
    assert [len(n) for n in nbest] == [3] * len(texts) and [n[0] for n in nbest] == best
    assert all(len(set(n)) == 3 for n in nbest)
    hypotheses = hub.generate(list(SOURCES), beam=4, nbest=3, max_len_b=MAX_LEN_B)
    for hypos, decoded in zip(hypotheses, nbest):
        assert [hub.decode(h["tokens"]) for h in hypos] == decoded
        scores = [float(h["score"]) for h in hypos]
        assert scores == sorted(scores, reverse=True)
    # batched or one input at a time, the same hypotheses
    assert hub.generate(SOURCES[1], beam=4, nbest=3, max_len_b=MAX_LEN_B)[2]["tokens"].tolist() == (
        hypotheses[1][2]["tokens"].tolist()
    )
    assert len(hub.generate(list(SOURCES), beam=4, max_len_b=MAX_LEN_B)[0]) == 1  # nbest=1: one dict
    assert hub.sample(texts, beam=4, max_len_b=MAX_LEN_B) == best  # fairseq's conveniences
    assert hub.translate(texts, beam=4, max_len_b=MAX_LEN_B) == best
    torch.manual_seed(0)
    sampled = hub.generate(list(SOURCES), beam=3, nbest=3, sampling=True, max_len_b=MAX_LEN_B)
    assert [len(h) for h in sampled] == [3] * len(SOURCES)
    with pytest.raises(ValueError, match=r"nbest=5 needs 1 <= nbest <= beam \(beam=4\)"):
        hub.generate(texts, beam=4, nbest=5)
    with pytest.raises(ValueError, match="nbest=0"):
        hub.generate(texts, beam=4, nbest=0)


def test_generate_and_features_input_forms(hubs, palm):
    """Inputs are read once, so a generator or an open file gives what the list gives; a list may mix texts
    and ids; ids without their ``</s>`` are refused, as ``score`` refuses them (the datasets took the last id
    for the ``</s>`` and dropped a real token)."""
    for hub in (hubs["causal"], palm):
        texts = [hub.string(s) for s in SOURCES]
        best = hub.generate(texts, beam=4, max_len_b=MAX_LEN_B)
        assert hub.generate((t for t in texts), beam=4, max_len_b=MAX_LEN_B) == best
        by_ids = hub.generate(list(SOURCES), beam=4, max_len_b=MAX_LEN_B)
        mixed = hub.generate([texts[0], *SOURCES[1:]], beam=4, max_len_b=MAX_LEN_B)
        assert [h[0]["tokens"].tolist() for h in mixed] == [h[0]["tokens"].tolist() for h in by_ids]
        with pytest.raises(ValueError, match=r"inputs\[1\] does not end with </s>"):
            hub.generate([SOURCES[0], SOURCES[1][:-1]], beam=4, max_len_b=MAX_LEN_B)
        features = hub.extract_features(list(SOURCES))
        torch.testing.assert_close(hub.extract_features(iter(texts)), features, atol=1e-6, rtol=0)
        with pytest.raises(ValueError, match=r"tokens\[0\] does not end with </s>"):
            hub.extract_features(SOURCES[0][:-1])


def test_generate_with_fixed_shape_steps(hubs, monkeypatch):
    """``generate(decoding_step=...)``: the task's --decoding-step for one call."""
    from unilm_fairseq.models.static_decoding import StaticDecodingStep

    hub = hubs["pseudo_masked"]
    eager = hub.generate(list(SOURCES), beam=4, nbest=4, max_len_b=MAX_LEN_B)
    built = []
    init = StaticDecodingStep.__init__
    monkeypatch.setattr(
        StaticDecodingStep, "__init__", lambda self, *a, **k: built.append(1) or init(self, *a, **k)
    )
    static = hub.generate(list(SOURCES), beam=4, nbest=4, max_len_b=MAX_LEN_B, decoding_step="static")
    assert built and hub.task.cfg.decoding_step == "eager"  # for that call only
    for hypos_a, hypos_b in zip(static, eager):
        assert [h["tokens"].tolist() for h in hypos_a] == [h["tokens"].tolist() for h in hypos_b]
        assert (
            max(abs(float(a["score"]) - float(b["score"])) for a, b in zip(hypos_a, hypos_b)) < DECODING_TOL
        )
    with pytest.raises(ValueError, match="one of"):  # the config refuses it (old configs: the decoder)
        hub.generate(list(SOURCES), decoding_step="graph")


def test_the_model_class_loads_the_same_interface(folders, hubs):
    assert UniLMModel is UniLMHubInterface
    for method, folder in folders.items():
        hub = UniLMv2Model.from_pretrained(str(folder), CHECKPOINT)
        assert type(hub) is UniLMHubInterface
        assert hub.model.decoder.spec.method.value == method
        ours = hubs[method]
        assert hub.generate(list(SOURCES), beam=3, max_len_b=MAX_LEN_B)[0][0]["tokens"].tolist() == (
            ours.generate(list(SOURCES), beam=3, max_len_b=MAX_LEN_B)[0][0]["tokens"].tolist()
        )
        for a, b in zip(hub.score(SOURCES, TARGETS), ours.score(SOURCES, TARGETS)):
            assert torch.equal(a["positional_scores"], b["positional_scores"])


# the largest |difference| of a half-precision log-prob from float32's on the tiny sharpened model
HALF_TOL = {torch.float16: 0.01, torch.bfloat16: 0.05}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_dtype_round_trip_on_cpu(folders, hubs, dtype):
    reference = hubs["pseudo_masked"]
    hub = UniLMModel.from_pretrained(str(folders["pseudo_masked"]), CHECKPOINT)
    assert isinstance(hub, nn.Module)
    params = list(hub.parameters())
    assert params and {id(p) for p in params} == {id(p) for p in hub.model.parameters()}
    expected = reference.score(SOURCES, TARGETS)
    assert hub.to(dtype) is hub
    assert {p.dtype for p in hub.parameters()} == {dtype} and hub.device.type == "cpu"
    scored = hub.score(SOURCES, TARGETS)
    for a, b in zip(scored, expected):
        assert a["positional_scores"].dtype == torch.float32
        difference = float((a["positional_scores"] - b["positional_scores"]).abs().max())
        assert 0 < difference < HALF_TOL[dtype]  # computed in the new dtype, close to float32
    hypotheses = hub.generate(list(SOURCES), beam=2, max_len_b=MAX_LEN_B)
    assert all(torch.isfinite(h[0]["positional_scores"]).all() for h in hypotheses)
    assert hub.extract_features(SOURCES[:2]).dtype == dtype
    assert hub.float() is hub
    assert {p.dtype for p in hub.parameters()} == {torch.float32}
    for a, b in zip(hub.score(SOURCES, TARGETS), expected):  # weights rounded to the half dtype once
        torch.testing.assert_close(
            a["positional_scores"], b["positional_scores"], atol=HALF_TOL[dtype], rtol=0
        )
    assert {p.dtype for p in reference.parameters()} == {torch.float32}  # another loaded hub: unchanged
    assert hub.cpu() is hub and hub.to("cpu").device.type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_to_cuda_and_back(folders, hubs):
    reference = hubs["causal"]
    hub = UniLMModel.from_pretrained(str(folders["causal"]), CHECKPOINT)
    expected = reference.score(SOURCES, TARGETS)
    expected_hypos = reference.generate(list(SOURCES), beam=3, max_len_b=MAX_LEN_B)
    hub.to(torch.device("cuda"))
    assert hub.device.type == "cuda" and all(p.is_cuda for p in hub.parameters())
    for a, b in zip(hub.score(SOURCES, TARGETS), expected):
        assert a["positional_scores"].device.type == "cpu"
        torch.testing.assert_close(a["positional_scores"], b["positional_scores"], atol=1e-4, rtol=0)
    hypos = hub.generate(list(SOURCES), beam=3, max_len_b=MAX_LEN_B)
    assert [h[0]["tokens"].tolist() for h in hypos] == [h[0]["tokens"].tolist() for h in expected_hypos]
    hub.half()
    assert {p.dtype for p in hub.parameters()} == {torch.float16}
    for a, b in zip(hub.score(SOURCES, TARGETS), expected):
        torch.testing.assert_close(a["positional_scores"], b["positional_scores"], atol=0.02, rtol=0)
    hub.float().cpu()
    assert hub.device.type == "cpu" and all(not p.is_cuda for p in hub.parameters())


@pytest.fixture(scope="module")
def palm(tmp_path_factory):
    """A tiny PALM hub with the pairs binarized as its task's ``train`` split."""
    data = tmp_path_factory.mktemp("palm")
    write_pairs(data, "train", SOURCES, TARGETS, D)
    task = palm_task(D, data)
    return palm_hub(palm_model(D, no_encoder_mlm_head=True), task)


def test_palm_score_equals_the_training_forward(palm):
    task, model = palm.task, palm.model
    dataset = task.load_dataset("train")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    criterion = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.0)
    with torch.no_grad():
        loss, sample_size, _ = criterion(model, batch)
        _, nll = criterion.compute_loss(model, model(**batch["net_input"]), batch, reduce=False)
    nll = nll.view(batch["target"].shape)
    scored = palm.score(SOURCES, TARGETS, batch_size=2)
    assert sample_size == sum(len(t) for t in TARGETS)
    for row, pair in enumerate(batch["id"].tolist()):
        target = TARGETS[pair]
        real = batch["target"][row].ne(D.pad())
        assert batch["target"][row][real].tolist() == target.tolist()
        torch.testing.assert_close(scored[pair]["positional_scores"], -nll[row][real], atol=TOL, rtol=0)
    assert -sum(float(r["log_prob"]) for r in scored) == pytest.approx(float(loss), abs=1e-4)
    hypotheses = palm.generate(list(SOURCES), beam=3, nbest=2, max_len_b=MAX_LEN_B)
    targets = [h["tokens"] for hypos in hypotheses for h in hypos]
    rescored = palm.score([s for s in SOURCES for _ in range(2)], targets)
    for result, hypo in zip(rescored, (h for hypos in hypotheses for h in hypos)):
        torch.testing.assert_close(
            result["positional_scores"], hypo["positional_scores"].cpu(), atol=DECODING_TOL, rtol=0
        )


def test_palm_has_no_fixed_shape_steps(palm):
    with pytest.raises(TypeError, match="decoding_step is an option of the unilm_seq2seq task's models"):
        palm.generate(list(SOURCES), beam=2, max_len_b=MAX_LEN_B, decoding_step="static")
