"""--eval-rouge's options and its aggregation over validation batches (the end-to-end check against
fairseq-generate is in tests/cli/test_cli_seq2seq.py)."""

import pytest
import torch
from fairseq import metrics
from fairseq.data import Dictionary

from unilm_fairseq.scoring.metrics import rouge_scores
from unilm_fairseq.tasks.rouge_validation import COUNT, RougeValidationTask, generation_args


def test_generation_args_default_to_greedy_and_take_json():
    assert generation_args("{}").beam == 1
    args = generation_args('{"beam": 4, "max_len_b": 48, "no_repeat_ngram_size": 3}')
    assert (args.beam, args.max_len_b, args.no_repeat_ngram_size) == (4, 48, 3)


@pytest.mark.parametrize(
    "text, message",
    [("{beam: 4}", "not JSON"), ("[4]", "JSON object"), ('{"beems": 4}', "unknown option 'beems'")],
)
def test_bad_generation_args_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        generation_args(text)


class Base:
    def reduce_metrics(self, logging_outputs, criterion):
        pass


class Task(RougeValidationTask, Base):
    def __init__(self):
        self.cfg = type("Cfg", (), {"eval_rouge": True})()


def test_the_logged_rouge_is_the_mean_over_all_pairs_not_over_batches():
    # batch 1: 3 pairs with mean ROUGE-L 0.5; batch 2: 1 pair with 0.9 -> (1.5 + 0.9) / 4 = 0.6
    outputs = [
        {"_rouge_1_sum": 1.5, "_rouge_2_sum": 0.3, "_rouge_l_sum": 1.5, COUNT: 3},
        {"_rouge_1_sum": 0.9, "_rouge_2_sum": 0.1, "_rouge_l_sum": 0.9, COUNT: 1},
    ]
    with metrics.aggregate(new_root=True) as aggregated:
        Task().reduce_metrics(outputs, criterion=None)
        values = aggregated.get_smoothed_values()
    assert values["rouge_l"] == pytest.approx(60.0) and values["rouge_2"] == pytest.approx(10.0)


def test_the_logged_rouge_takes_all_reduced_tensors():
    # with more than one worker fairseq hands reduce_metrics float64 tensors: round() refused them
    sums = {"_rouge_1_sum": 1.5, "_rouge_2_sum": 0.3, "_rouge_l_sum": 1.5, COUNT: 3}
    outputs = [{key: torch.tensor(value, dtype=torch.float64) for key, value in sums.items()}]
    with metrics.aggregate(new_root=True) as aggregated:
        Task().reduce_metrics(outputs, criterion=None)
        values = aggregated.get_smoothed_values()
    assert values["rouge_l"] == pytest.approx(50.0) and values["rouge_2"] == pytest.approx(10.0)


class GeneratingTask(RougeValidationTask, Base):
    """rouge_pairs with the search replaced by fixed hypotheses."""

    def __init__(self, dictionary, hypotheses):
        self.cfg = type("Cfg", (), {"eval_rouge": True, "eval_rouge_detok": "none"})()
        self.target_dictionary, self.hypotheses, self.rouge_generator = dictionary, hypotheses, None

    def inference_step(self, generator, models, sample):
        return [[{"tokens": torch.tensor(self.dictionary_ids(h))}] for h in self.hypotheses]

    def dictionary_ids(self, words):
        return [self.target_dictionary.index(w) for w in words.split()] + [self.target_dictionary.eos()]


def test_an_unknown_word_in_the_hypothesis_never_matches_one_in_the_reference():
    dictionary = Dictionary()
    dictionary.add_symbol("the")
    task = GeneratingTask(dictionary, ["the <unk> <unk> <unk>"])
    # the reference "the zebra quietly slept": the dictionary lacks its last three words
    target = torch.tensor([[dictionary.index("the"), *[dictionary.unk()] * 3, dictionary.eos()]])
    sample = {"id": torch.tensor([0]), "target": target,
              "net_input": {"src_tokens": target, "src_lengths": torch.tensor([5])}}  # fmt: skip
    hyps, refs = task.rouge_pairs(model=None, sample=sample)
    scores = rouge_scores(hyps, refs)
    assert scores["rouge1"] == pytest.approx(0.25) and scores["rouge2"] == 0.0  # "the" alone matches
