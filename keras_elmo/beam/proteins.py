"""Protein FASTA on the Beam corpus pipeline: `ReadFasta` reads the
records of FASTA files (`elmo_core.proteins.fasta`), `EmbedProteins` embeds
each distinct sequence once and gives its vectors to every record of it;
`embed_corpus` (`keras_elmo.beam.pipeline`) writes them as it writes
sentences."""

import copy

import apache_beam as beam
from apache_beam.ml.inference.base import RunInference

from elmo_core.embedding_files.sentences import BadLine
from elmo_core.errors import KerasElmoError
from elmo_core.proteins import fasta
from elmo_core.text.bad_lines import DUPLICATE_ID
from keras_elmo.beam.corpus_paths import patterns_of
from keras_elmo.beam.elements import BAD
from keras_elmo.beam.elements import KEYED
from keras_elmo.beam.elements import SENTENCES
from keras_elmo.beam.elements import EmbedTransform
from keras_elmo.beam.elements import inference_array
from keras_elmo.beam.elements import open_files
from keras_elmo.beam.elements import read_keyed


def _fasta_records(readable_file, max_residues):
    """`((path, header_line), FastaRecord)` of each record of a matched
    FASTA file (`elmo_core.proteins.fasta`), or a `BadLine` (`unreadable`)
    where the file cannot be read on or is no FASTA."""

    def records(lines, path):
        for record in fasta.fasta_records(lines, path, max_residues):
            yield record.line, record

    yield from read_keyed(readable_file, records)


class ReadFasta(beam.PTransform):
    """Every record of the FASTA files that `patterns` match, keyed by
    `(file, header line)`, as a `elmo_core.proteins.fasta.FastaRecord`
    (checked: a bad one carries its `reason`), or a `BadLine` where a file
    cannot be read on; spread over the workers. With `matched`, as
    `keras_elmo.beam.ReadLines`: files read as named, never matched
    again."""

    def __init__(
        self, patterns, max_residues=fasta.DEFAULT_MAX_RESIDUES, matched=False
    ):
        super().__init__()
        self.patterns = patterns_of(patterns, "patterns")
        self.max_residues = max_residues
        self.matched = matched

    def expand(self, pbegin):
        return (
            open_files(pbegin, self.patterns, self.matched)
            | "Records" >> beam.FlatMap(_fasta_records, self.max_residues)
            | "Spread" >> beam.Reshuffle()
        )


class _SplitRecords(beam.DoFn):
    """A good record as `(id, (file, line, hash, sequence))`, a bad one
    to the BAD output."""

    def process(self, element):
        yield from _split_records(element)


def _split_records(element):
    key, record = element
    if isinstance(record, BadLine):
        yield beam.pvalue.TaggedOutput(BAD, (key, record.reason, str(record)))
    elif record.reason is not None:
        bad = (key, record.reason, record.detail)
        yield beam.pvalue.TaggedOutput(BAD, bad)
    else:
        digest = fasta.sequence_hash(record.sequence)
        yield record.id, (*key, digest, record.sequence)


class _OneSequencePerId(beam.DoFn):
    """The records of one id: the first (by file and line) keeps it,
    so do later ones of the same sequence; another sequence under the id
    is a bad record (`duplicate_id`)."""

    def process(self, element):
        yield from _one_sequence_per_id(element)


def _one_sequence_per_id(element):
    record_id, members = element
    members = sorted(members)
    first_file, first_line, digest, _ = members[0]
    for file, line, other, sequence in members:
        if other == digest:
            yield digest, (file, line, record_id, sequence)
            continue
        detail = (
            f"the id {record_id!r} was given to another sequence at "
            f"{first_file}, line {first_line}; ids must be unique"
        )
        yield beam.pvalue.TaggedOutput(
            BAD, ((file, line), DUPLICATE_ID, detail)
        )


def _once_per_sequence(element):
    """One sequence and every record that holds it: embedded once."""
    digest, members = element
    members = sorted(members)
    sequence = members[0][3]
    keys = tuple(
        (file, line, record_id) for file, line, record_id, _ in members
    )
    return (digest, len(sequence), keys), list(sequence)


def _protein_rows(element):
    (digest, residues, keys), vectors = element
    for file, line, record_id in keys:
        yield (file, line, record_id, digest, residues), vectors


class EmbedProteins(EmbedTransform):
    """`ReadFasta`'s records -> `{SENTENCES: ((file, line, id, hash,
    residues), vectors), BAD: (key, reason, detail)}`: bad records and
    ids given to two sequences go aside, and each distinct sequence is
    embedded once (`RunInference`, an `ELMoModelHandler` of an embedder
    with `protein_vectors`), its vectors given to every record of it."""

    def expand(self, records):
        split = records | "Check" >> beam.ParDo(
            _SplitRecords()
        ).with_output_types(KEYED).with_outputs(BAD, main=SENTENCES)
        by_id = (
            split[SENTENCES]
            | "ById" >> beam.GroupByKey()
            | "OneSequencePerId"
            >> beam.ParDo(_OneSequencePerId())
            .with_output_types(KEYED)
            .with_outputs(BAD, main=SENTENCES)
        )
        handler = self.model_handler()
        embedded = (
            by_id[SENTENCES]
            | "BySequence" >> beam.GroupByKey()
            | "OncePerSequence" >> beam.Map(_once_per_sequence)
            | "Embed" >> RunInference(handler)
            | "Vectors" >> beam.Map(inference_array)
            | "EveryRecord" >> beam.FlatMap(_protein_rows)
        )
        bad = (split[BAD], by_id[BAD]) | "AllBad" >> beam.Flatten()
        return {SENTENCES: embedded, BAD: bad}


def protein_counts(element):
    return {"sentences": 1, "tokens": element[0][4]}


def embedder_for(embedder, proteins, input_format):
    """`embedder`, with `protein_vectors` ("both" unless it has them) for
    FASTA input; an embedder of proteins for text is refused."""
    if proteins:
        fasta.simple_fasta_parser()  # the extra, checked before the run
        if embedder.protein_vectors is None:
            embedder = copy.copy(embedder)
            embedder.protein_vectors = "both"
        return embedder
    if embedder.protein_vectors is not None:
        raise KerasElmoError(
            "`embedder` has `protein_vectors` (for FASTA input) but the "
            "inputs are read as one sentence a line; give `input_format` "
            "'fasta', or an embedder without `protein_vectors`.",
            "input_format",
            received=input_format,
        )
    return embedder
