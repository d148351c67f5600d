"""What the plugin's tasks share: one dictionary for source and target, with ``<mask>``."""

from fairseq import utils
from fairseq.tasks import FairseqTask

from ..data.dictionary import load_dictionary_with_mask


class SharedDictionaryTask(FairseqTask):
    """Base of tasks whose inputs and outputs use one dictionary (one embedding table)."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def load_dictionary(cls, filename):
        return load_dictionary_with_mask(filename)

    @staticmethod
    def data_paths(data: str):
        paths = utils.split_paths(data)
        if not paths:
            raise ValueError("--data (the task's DATA argument) is empty")
        return paths

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
