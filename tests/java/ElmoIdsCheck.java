// The test side of examples/device/ElmoIds.java (tests/test_device_ids.py):
// reads sentences written as UTF-16 code units (so that any Java string,
// unpaired surrogates included, gets through) and a vocabulary, and writes
// ElmoIds's ids and its whitespace for every code point.
//
//   java ElmoIdsCheck SENTENCES VOCAB OUT
//
// SENTENCES: one sentence a line, tokens separated by spaces, each token
// "u" followed by its code units in hex joined by "." ("u" alone: "").

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public final class ElmoIdsCheck {
    public static void main(String[] args) throws IOException {
        List<List<String>> sentences = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            List<String> sentence = new ArrayList<>();
            for (String token : line.split(" ")) {
                if (!token.isEmpty()) {
                    sentence.add(decode(token));
                }
            }
            sentences.add(sentence);
        }
        Map<String, Integer> vocabulary;
        try (Reader file = new InputStreamReader(
                new FileInputStream(args[1]), StandardCharsets.UTF_8)) {
            vocabulary = ElmoIds.readVocabulary(file);
        }
        try (PrintWriter out = new PrintWriter(args[2], "UTF-8")) {
            int[][][] chars = ElmoIds.characterIds(sentences);
            int longest = chars.length == 0 ? 0 : chars[0].length;
            out.println("chars " + chars.length + " " + longest);
            for (int[][] sentence : chars) {
                for (int[] token : sentence) {
                    out.println(join(token));
                }
            }
            int[][] words = ElmoIds.wordIds(
                    sentences, vocabulary, ElmoIds.unknownId(vocabulary));
            out.println("words " + words.length);
            for (int[] sentence : words) {
                out.println(join(sentence));
            }
            StringBuilder spaces = new StringBuilder("spaces");
            for (int point = 0; point <= Character.MAX_CODE_POINT; point++) {
                if (ElmoIds.isSpace(point)) {
                    spaces.append(' ').append(point);
                }
            }
            out.println(spaces);
        }
    }

    // Also ElmoTokenizerCheck's reader of a text.
    static String decode(String token) {
        StringBuilder text = new StringBuilder();
        String units = token.substring(1);
        if (!units.isEmpty()) {
            for (String unit : units.split("\\.")) {
                text.append((char) Integer.parseInt(unit, 16));
            }
        }
        return text.toString();
    }

    private static String join(int[] values) {
        StringBuilder text = new StringBuilder();
        for (int value : values) {
            if (text.length() > 0) {
                text.append(' ');
            }
            text.append(value);
        }
        return text.toString();
    }
}
