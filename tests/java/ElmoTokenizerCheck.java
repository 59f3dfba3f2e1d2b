// The test side of examples/device/ElmoTokenizer.java
// (tests/test_device_ids.py): reads texts written as UTF-16 code units (so
// that any Java string, unpaired surrogates included, gets through) and
// writes ElmoTokenizer's tokens of each, their ElmoIds character ids, and
// the class of every code point the rule reads (letter or not).
//
//   java ElmoTokenizerCheck TEXTS OUT
//
// TEXTS: one text a line, "u" followed by its code units in hex joined by
// "." ("u" alone: ""). OUT: a line "tokens N", then per text its tokens in
// the same spelling, space-separated; then "ids T", then the 50 ids of
// each token position of the [text][token][50] batch; then a line
// "letters" and one character per code point from 0 to U+10FFFF: "L" a
// letter, "U" unassigned in this Java's Unicode, "." any other.

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

public final class ElmoTokenizerCheck {
    public static void main(String[] args) throws IOException {
        List<List<String>> sentences = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            sentences.add(ElmoTokenizer.tokenize(ElmoIdsCheck.decode(line)));
        }
        try (PrintWriter out = new PrintWriter(args[1], "UTF-8")) {
            out.println("tokens " + sentences.size());
            for (List<String> tokens : sentences) {
                StringBuilder line = new StringBuilder();
                for (String token : tokens) {
                    line.append(line.length() > 0 ? " " : "")
                            .append(encode(token));
                }
                out.println(line);
            }
            int[][][] ids = ElmoIds.characterIds(sentences);
            int longest = ids.length == 0 ? 0 : ids[0].length;
            out.println("ids " + longest);
            for (int[][] sentence : ids) {
                for (int[] token : sentence) {
                    StringBuilder row = new StringBuilder();
                    for (int id : token) {
                        row.append(row.length() > 0 ? " " : "").append(id);
                    }
                    out.println(row);
                }
            }
            out.println("letters");
            StringBuilder classes = new StringBuilder();
            for (int point = 0; point <= Character.MAX_CODE_POINT; point++) {
                classes.append(Character.isLetter(point) ? 'L'
                        : Character.getType(point) == Character.UNASSIGNED
                        ? 'U' : '.');
            }
            out.println(classes);
        }
    }

    private static String encode(String token) {
        StringBuilder units = new StringBuilder("u");
        for (int i = 0; i < token.length(); i++) {
            units.append(i > 0 ? "." : "")
                    .append(Integer.toHexString(token.charAt(i)));
        }
        return units.toString();
    }
}
