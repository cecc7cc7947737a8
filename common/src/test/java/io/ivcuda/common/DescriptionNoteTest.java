package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class DescriptionNoteTest {
    private static final String OK = "GPU 0 shared, 256 MiB region, plain mode; no save or migration";

    @Test
    void saysWhatTheDomainGets() {
        assertEquals(OK, DescriptionNote.provisioned(new VmSettings(0, "0", Mode.PLAIN, 256L << 20, 0)));
        assertEquals("GPU GPU-1234abcd shared, 1 GiB region, doorbell mode, 4 GiB GPU memory quota; no save or migration",
                DescriptionNote.provisioned(new VmSettings(1, "GPU-1234abcd", Mode.DOORBELL, 1L << 30, 4L << 30)));
        assertEquals("error: region size 300M is not a power of two", DescriptionNote.error("region size 300M is not a power of two"));
    }

    @Test
    void ourLineComesFirstAndTheUsersTextStays() {
        assertEquals("[ivcuda] " + OK, DescriptionNote.apply(null, OK));
        assertEquals("[ivcuda] " + OK, DescriptionNote.apply("", OK));
        assertEquals("[ivcuda] " + OK + "\nmy web server\n  indented, and a trailing newline\n",
                DescriptionNote.apply("my web server\n  indented, and a trailing newline\n", OK));
    }

    @Test
    void ourLineIsReplacedWhereItIs() {
        String before = "first the user's line\n[ivcuda] GPU 0 shared, 64 MiB region, plain mode\nthen another";
        String after = DescriptionNote.apply(before, "error: quota 'x': not a byte count");
        assertEquals("first the user's line\n[ivcuda] error: quota 'x': not a byte count\nthen another", after);
        assertEquals("quota 'x': not a byte count", DescriptionNote.errorCause(after));
        assertEquals("error: quota 'x': not a byte count", DescriptionNote.find(after));
        assertEquals(after, DescriptionNote.apply(after, "error: quota 'x': not a byte count"), "applying again changes nothing");
    }

    @Test
    void removingLeavesOnlyTheUsersText() {
        assertEquals("mine", DescriptionNote.apply("[ivcuda] " + OK + "\nmine", null));
        assertNull(DescriptionNote.apply("[ivcuda] " + OK, null), "nothing left: no description at all");
        assertEquals("  \n", DescriptionNote.apply("  \n", null), "a description without our line is never touched");
        assertNull(DescriptionNote.apply(null, null));
        assertEquals("[ivcuda] new\nmine", DescriptionNote.apply("[ivcuda] old\nmine\n[ivcuda] copy", "new"), "one line of ours at most");
    }

    @Test
    void aNoteIsOneLine() {
        assertEquals("[ivcuda] error: a b", DescriptionNote.apply(null, DescriptionNote.error("a\nb")));
        assertNull(DescriptionNote.errorCause("[ivcuda] " + OK));
        assertNull(DescriptionNote.errorCause("error: written by the user, without our marker"));
    }
}
