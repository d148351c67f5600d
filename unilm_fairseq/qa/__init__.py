"""Extractive question answering (SQuAD v1.1/v2.0): examples and their character offsets, the
sliding windows ``--task squad_qa`` trains on, and the span decoding that turns start/end scores
into answers."""
