"""Shared fixtures: a tiny dictionary, one intra-op thread for tiny-model modules, the plugin's warning
filters in every test."""

import pytest
import torch

import unilm_fairseq  # noqa: F401  (registers the plugin's parts)
from unilm_fairseq.known_warnings import quiet_known_warnings

from .helpers.models import make_dictionary


@pytest.fixture
def dictionary():
    return make_dictionary()


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module of tiny-model tests: their tensors gain nothing from more, and on a
    shared machine the threads' syncs are slow."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def plugin_warning_filters():
    """The filters the plugin sets when fairseq loads it (unilm_fairseq/known_warnings.py: fairseq 0.12's
    Hydra, pinned-memory, autocast and attention-mask warnings, which ask nothing of a user), in force in
    every test as on a command's console. pytest restores the warning filters around each test, which drops
    them, and the summary then listed those warnings by the hundred; any other warning still shows there."""
    quiet_known_warnings()
