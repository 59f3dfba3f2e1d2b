// A raw sentence as tokens, on the device: the rule of
// `elmo_core/text/device_tokenizer.py` (written out in its docstring and
// in docs/deploy.md), a short approximation of spaCy's English tokenizer,
// which `keras-elmo prepare` splits a corpus with. Java 8 and the standard
// library only; Kotlin calls it as is. tests/test_device_ids.py compiles
// it with the JDK and checks its tokens, and their ids, equal the Python
// rule's on odd input.

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

public final class ElmoTokenizer {
    private static final String PUNCTUATION =
            "!\"#&'()*,:;<>?[]_`{}\u00a1\u00ab\u00bb\u00bf\u2018\u2019\u201a"
            + "\u201c\u201d\u201e\u2026\u2013\u2014"
            + "\u3002\u3001\uff0c\uff01\uff1f\uff1b\uff1a";
    private static final String CURRENCY = "$\u00a3\u20ac\u00a5";
    private static final String HYPHENS = "-\u2013\u2014";
    private static final String JOINERS = "/,";
    private static final String ELLIPSIS = "\u2026";
    private static final String APOSTROPHES = "'\u2019";
    private static final String[] CLITICS =
            {"n't", "'s", "'m", "'d", "'ll", "'re", "'ve"};
    private static final String[] RUNS = {HYPHENS, ".", ELLIPSIS, JOINERS};
    private static final Set<String> ABBREVIATIONS = new HashSet<>(
            Arrays.asList(("Mr Mrs Ms Dr St Jr Sr Prof Rev Gen Gov Sen Rep Mt "
                    + "Inc Ltd Co Corp Bros vs Jan Feb Mar Apr Jun Jul Aug Sep "
                    + "Sept Oct Nov Dec").split(" ")));

    private ElmoTokenizer() {}

    /** The tokens of one sentence of raw text. */
    public static List<String> tokenize(String text) {
        List<String> tokens = new ArrayList<>();
        for (String word : ElmoIds.splitWhitespace(normalize(text))) {
            wordTokens(word.codePoints().toArray(), tokens);
        }
        return tokens;
    }

    /** The normal form `keras-elmo prepare` gives a line: NFC; the C0,
     *  DEL and C1 controls as spaces; U+FEFF, U+200B, U+00AD removed
     *  (whitespace runs are then split on). */
    static String normalize(String text) {
        String composed = Normalizer.normalize(text, Normalizer.Form.NFC);
        StringBuilder kept = new StringBuilder(composed.length());
        for (int i = 0; i < composed.length(); ) {
            int point = composed.codePointAt(i);
            i += Character.charCount(point);
            if (point <= 0x1f || (point >= 0x7f && point <= 0x9f)) {
                kept.append(' ');
            } else if (point != 0xfeff && point != 0x200b && point != 0xad) {
                kept.appendCodePoint(point);
            }
        }
        return kept.toString();
    }

    // Steps 3 to 5 of the rule on one word (code points).
    private static void wordTokens(int[] word, List<String> tokens) {
        int start = 0;
        int end = word.length;
        while (end - start > 1) {  // 3: the front
            int size = frontPiece(word, start, end);
            if (size == 0) {
                break;
            }
            tokens.add(text(word, start, start + size));
            start += size;
        }
        List<String> back = new ArrayList<>();
        while (end - start > 1) {  // 4: the end
            int size = backPiece(word, start, end);
            if (size == 0) {
                break;
            }
            back.add(text(word, end - size, end));
            end -= size;
        }
        inside(word, start, end, tokens);  // 5
        Collections.reverse(back);
        tokens.addAll(back);
    }

    private static int frontPiece(int[] word, int start, int end) {
        int run = 0;
        while (start + run < end && word[start + run] == '.') {
            run++;
        }
        if (run > 1 && run < end - start) {
            return run;
        }
        return in(PUNCTUATION, word[start]) || in(CURRENCY, word[start])
                ? 1 : 0;
    }

    private static int backPiece(int[] word, int start, int end) {
        int run = 0;
        while (run < end - start && word[end - 1 - run] == '.') {
            run++;
        }
        if (run > 1) {
            return run < end - start ? run : 0;
        }
        if (in(PUNCTUATION, word[end - 1]) || word[end - 1] == '%') {
            return 1;
        }
        for (String clitic : CLITICS) {
            int size = clitic.length();
            if (end - start > size && isClitic(word, end - size, clitic)) {
                return size;
            }
        }
        return run == 1 && !isAbbreviation(word, start, end - 1) ? 1 : 0;
    }

    // The clitic at `from`: either apostrophe, ASCII letters in any case.
    private static boolean isClitic(int[] word, int from, String clitic) {
        for (int k = 0; k < clitic.length(); k++) {
            int have = word[from + k];
            char want = clitic.charAt(k);
            boolean same = want == '\''
                    ? in(APOSTROPHES, have)
                    : have == want || have == Character.toUpperCase(want);
            if (!same) {
                return false;
            }
        }
        return true;
    }

    // One of ABBREVIATIONS, or letters each followed by a period ("U.S").
    private static boolean isAbbreviation(int[] word, int start, int end) {
        if (ABBREVIATIONS.contains(text(word, start, end))) {
            return true;
        }
        if ((end - start) % 2 == 0) {
            return false;
        }
        for (int k = start; k < end; k++) {
            boolean fits = (k - start) % 2 == 0
                    ? Character.isLetter(word[k]) : word[k] == '.';
            if (!fits) {
                return false;
            }
        }
        return true;
    }

    private static void inside(int[] word, int start, int end,
                               List<String> tokens) {
        String whole = text(word, start, end);
        if (whole.contains("://") || whole.contains("@")
                || whole.startsWith("www.")) {
            tokens.add(whole);
            return;
        }
        int from = start;
        for (int i = start + 1; i < end - 1; ) {
            int runEnd = runEnd(word, i, end);
            if (runEnd < 0) {
                i++;
                continue;
            }
            if (runEnd < end && splits(word, i, runEnd)) {
                tokens.add(text(word, from, i));
                tokens.add(text(word, i, runEnd));
                from = runEnd;
            }
            i = runEnd;
        }
        tokens.add(text(word, from, end));
    }

    // The end of the run of one of RUNS that begins at i, -1 for none.
    private static int runEnd(int[] word, int i, int end) {
        for (String kind : RUNS) {
            if (in(kind, word[i])) {
                int runEnd = i;
                while (runEnd < end && in(kind, word[runEnd])) {
                    runEnd++;
                }
                return runEnd;
            }
        }
        return -1;
    }

    private static boolean splits(int[] word, int start, int end) {
        int first = word[start];
        int before = word[start - 1];
        int after = word[end];
        if (first == '.') {
            return end - start > 1;
        }
        if (in(ELLIPSIS, first)) {
            return true;
        }
        if (first == ',') {
            return Character.isLetter(before) && Character.isLetter(after);
        }
        if (isDigit(before) && isDigit(after)) {
            return in(HYPHENS, first);
        }
        return (Character.isLetter(before) || isDigit(before))
                && Character.isLetter(after);
    }

    private static boolean isDigit(int point) {
        return point >= '0' && point <= '9';
    }

    private static boolean in(String characters, int point) {
        return characters.indexOf(point) >= 0;
    }

    private static String text(int[] word, int start, int end) {
        return new String(word, start, end - start);
    }
}
