"""Protein FASTA in: records streamed within bounds, checked, one residue
a token (`fasta`). The per-residue and per-protein vectors they become
are written by `elmo_core.embedding_files.hdf5_layout`."""

from elmo_core.proteins.fasta import read_fasta

__all__ = ["read_fasta"]
