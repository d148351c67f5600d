"""Readers and converters used by the preparation scripts in ``scripts/`` (ACLSum, GLUE, MS MARCO,
SQuAD question generation, raw seq2seq text). Nothing under ``tasks/``, ``models/`` or
``criterions/`` imports them: training and generation never need them."""
