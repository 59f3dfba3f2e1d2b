// ELMo's input ids of a sentence, for an app that runs an exported biLM or
// a whole tagger with the ONNX Runtime or LiteRT of its platform: the
// character ids of `elmo_core.characters.batch_to_ids` and the word ids of
// `keras_elmo.data.Vocabulary.batch_to_ids` (or of a tagger's own word
// vocabulary). Java 8 and the standard library only; Kotlin calls it as is.
// tests/test_device_ids.py compiles it with the JDK and compares its ids
// with the package's on odd input.

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class ElmoIds {
    /** Ids a token: its UTF-8 bytes framed and padded. */
    public static final int MAX_CHARACTERS_PER_TOKEN = 50;
    /** Bytes of a token kept: the first 48 (a character may be cut). */
    public static final int MAX_TOKEN_BYTES = MAX_CHARACTERS_PER_TOKEN - 2;
    // Special characters before the +1 shift (0 is the padding token).
    private static final int BOS_CHAR = 256;
    private static final int EOS_CHAR = 257;
    private static final int BOW_CHAR = 258;
    private static final int EOW_CHAR = 259;
    private static final int PAD_CHAR = 260;

    private ElmoIds() {}

    /** The 50 character ids of one token ("<S>" and "</S>" are the
     *  sentence boundaries). */
    public static int[] tokenIds(String token) {
        if (token.equals("<S>")) {
            return specialRow(BOS_CHAR);
        }
        if (token.equals("</S>")) {
            return specialRow(EOS_CHAR);
        }
        byte[] bytes = utf8(token);
        int kept = Math.min(bytes.length, MAX_TOKEN_BYTES);
        int[] row = new int[MAX_CHARACTERS_PER_TOKEN];
        Arrays.fill(row, PAD_CHAR + 1);
        row[0] = BOW_CHAR + 1;
        for (int i = 0; i < kept; i++) {
            row[i + 1] = (bytes[i] & 0xFF) + 1;
        }
        row[kept + 1] = EOW_CHAR + 1;
        return row;
    }

    /** Character ids of a batch, [sentence][token][50]: every sentence
     *  padded to the longest with rows of zeros (the padding token). */
    public static int[][][] characterIds(List<List<String>> sentences) {
        int longest = longest(sentences);
        int[][][] ids = new int[sentences.size()][longest][];
        for (int i = 0; i < sentences.size(); i++) {
            List<String> sentence = sentences.get(i);
            for (int j = 0; j < longest; j++) {
                ids[i][j] = j < sentence.size()
                        ? tokenIds(sentence.get(j))
                        : new int[MAX_CHARACTERS_PER_TOKEN];
            }
        }
        return ids;
    }

    /** Word ids of a batch, [sentence][token], padded with 0: `vocabulary`
     *  maps a word to its id, `unknown` is the id of every other word. For a
     *  word-input biLM, `readVocabulary` of its vocab.txt and
     *  `unknownId` of that; for a tagger, its own words and other-word id. */
    public static int[][] wordIds(List<List<String>> sentences,
                                  Map<String, Integer> vocabulary,
                                  int unknown) {
        int[][] ids = new int[sentences.size()][longest(sentences)];
        for (int i = 0; i < sentences.size(); i++) {
            List<String> sentence = sentences.get(i);
            for (int j = 0; j < sentence.size(); j++) {
                Integer id = vocabulary.get(sentence.get(j));
                ids[i][j] = id == null ? unknown : id;
            }
        }
        return ids;
    }

    /** A biLM's vocab.txt (UTF-8, one token a line, "<S>", "</S>",
     *  "<UNK>" first) as word ids: line + 1 (0 pads). A line that is not
     *  one token, a token listed twice or a missing special token is an
     *  error, as in keras_elmo; a last line break is optional. */
    public static Map<String, Integer> readVocabulary(Reader file)
            throws IOException {
        StringBuilder text = new StringBuilder();
        char[] buffer = new char[8192];
        for (int n; (n = file.read(buffer)) > 0; ) {
            text.append(buffer, 0, n);
        }
        Map<String, Integer> ids = new HashMap<>();
        // Trailing empty strings are dropped: a last line break ends the
        // last line.
        String[] lines = text.toString().split("\n");
        for (int number = 1; number <= lines.length; number++) {
            String[] tokens = splitWhitespace(lines[number - 1]);
            if (tokens.length != 1 || ids.containsKey(tokens[0])) {
                throw new IOException("vocabulary line " + number + ": not "
                        + "one token listed once: " + lines[number - 1]);
            }
            ids.put(tokens[0], ids.size() + 1);
        }
        for (String special : new String[] {"<S>", "</S>", "<UNK>"}) {
            if (!ids.containsKey(special)) {
                throw new IOException("not a biLM vocabulary: no " + special);
            }
        }
        return ids;
    }

    /** The id of the words a biLM vocabulary does not hold. */
    public static int unknownId(Map<String, Integer> vocabulary) {
        return vocabulary.get("<UNK>");
    }

    private static int[] specialRow(int character) {
        int[] row = new int[MAX_CHARACTERS_PER_TOKEN];
        Arrays.fill(row, PAD_CHAR + 1);
        row[0] = BOW_CHAR + 1;
        row[1] = character + 1;
        row[2] = EOW_CHAR + 1;
        return row;
    }

    // UTF-8 of the token's code points; an unpaired surrogate has none and
    // is left out, as Python's encode("utf-8", "ignore") does.
    private static byte[] utf8(String token) {
        StringBuilder kept = new StringBuilder(token.length());
        for (int i = 0; i < token.length(); ) {
            int point = token.codePointAt(i);
            if (point < Character.MIN_SURROGATE
                    || point > Character.MAX_SURROGATE) {
                kept.appendCodePoint(point);
            }
            i += Character.charCount(point);
        }
        return kept.toString().getBytes(StandardCharsets.UTF_8);
    }

    // The tokens of a line, split where Python's str.split() splits.
    static String[] splitWhitespace(String line) {
        List<String> tokens = new ArrayList<>();
        StringBuilder token = new StringBuilder();
        for (int i = 0; i < line.length(); ) {
            int point = line.codePointAt(i);
            i += Character.charCount(point);
            if (isSpace(point)) {
                if (token.length() > 0) {
                    tokens.add(token.toString());
                    token.setLength(0);
                }
            } else {
                token.appendCodePoint(point);
            }
        }
        if (token.length() > 0) {
            tokens.add(token.toString());
        }
        return tokens.toArray(new String[0]);
    }

    // Python's str.isspace(): Java's whitespace, the no-break spaces and
    // NEL (U+0085).
    static boolean isSpace(int point) {
        return Character.isWhitespace(point) || Character.isSpaceChar(point)
                || point == 0x85;
    }

    private static int longest(List<List<String>> sentences) {
        int longest = 0;
        for (List<String> sentence : sentences) {
            longest = Math.max(longest, sentence.size());
        }
        return longest;
    }
}
