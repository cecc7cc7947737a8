package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Requests;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * The linker over a backend that "links" by concatenating its inputs: inputs arrive whole through
 * the window, the completed image comes back through it byte for byte, a read of another size is
 * refused, and link states go with cuLinkDestroy (once) or the process.
 */
class LinkTest extends StartedServerCase<LinkTest.LinkBackend> {
    static final long TOKEN = (82L << 32) | 5;
    static final long OTHER = (83L << 32) | 6;
    static final long STATE = 0xC000;

    static final class LinkBackend extends HostMemoryBackend {
        final StringBuilder linked = new StringBuilder();
        final List<Long> destroyed = new CopyOnWriteArrayList<>();
        volatile String lastName;
        volatile long image;

        @Override
        public int linkCreate(Out o, int count, long options, long values) {
            o.handle = STATE;
            return CuResult.SUCCESS;
        }

        @Override
        public int linkAddData(long state, int type, long data, long size, String name, int count, long options, long values) {
            byte[] b = new byte[(int) size];
            for (int i = 0; i < b.length; i++) {
                b[i] = UnsafeApi.getByte(data + i);
            }
            linked.append(new String(b, java.nio.charset.StandardCharsets.ISO_8859_1));
            lastName = name;
            return type == 1 ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        }

        @Override
        public int linkComplete(Out o, long state) {
            byte[] b = linked.toString().getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
            image = UnsafeApi.allocateMemory(b.length);
            for (int i = 0; i < b.length; i++) {
                UnsafeApi.putByte(image + i, b[i]);
            }
            o.address = image;
            o.bytes = b.length;
            return CuResult.SUCCESS;
        }

        @Override
        public int linkDestroy(long state) {
            destroyed.add(state);
            return CuResult.SUCCESS;
        }
    }

    LinkTest() {
        super(TOKEN, LinkBackend::new);
    }

    private static byte[] text(char fill, int n) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) fill);
        return b;
    }

    @Test
    void inputsGoInWholeAndTheImageComesBack() {
        Channel c = hello(0, TOKEN);
        Response created = c.call(Requests.ivc_link_create(new byte[0], 0));
        assertEquals(CuResult.SUCCESS, created.result());
        long state = created.out(0);
        assertEquals(HandleTable.KIND_LINK, HandleTable.kindOf(state));
        byte[] first = text('a', guest.windowSize + 10); // more than one window slot
        byte[] second = text('b', 100);
        assertEquals(CuResult.SUCCESS, c.streamRequest(Requests.ivc_link_add_data(state, 1, first.length, "a.ptx",
                new byte[0], 0), first).result());
        assertEquals("a.ptx", backend.lastName);
        assertEquals(CuResult.SUCCESS, c.streamRequest(Requests.ivc_link_add_data(state, 1, second.length, "b.ptx",
                new byte[0], 0), second).result());
        byte[] unsafe = new byte[16];
        unsafe[0] = 5; // CU_JIT_ERROR_LOG_BUFFER: a pointer, never passed
        int before = backend.linked.length();
        assertEquals(CuResult.INVALID_VALUE, c.streamRequest(Requests.ivc_link_add_data(state, 1, second.length, "c",
                unsafe, 16), second).result());
        assertEquals(before, backend.linked.length(), "refused before the driver, its bytes moved all the same");
        Response complete = c.call(Requests.ivc_link_complete(state));
        assertEquals(CuResult.SUCCESS, complete.result());
        long size = complete.out(0);
        assertTrue(size >= first.length + second.length);
        byte[] back = new byte[(int) size];
        assertEquals(CuResult.SUCCESS, c.dtohStreamRequest(Requests.ivc_link_read(state, size), back).result());
        assertEquals('a', back[0]);
        assertEquals('b', back[first.length]);
        byte[] wrong = new byte[10];
        assertEquals(CuResult.INVALID_VALUE, c.dtohStreamRequest(Requests.ivc_link_read(state, 10), wrong).result(),
                "only the completed image's size");
        assertArrayEquals(new byte[10], wrong, "and nothing of it");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_destroy(state)).result());
        assertEquals(List.of(STATE), backend.destroyed);
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_link_destroy(state)).result(), "destroyed once");
        assertEquals(null, server.vm().libraries().linkOutputOf(STATE), "its image forgotten");
    }

    @Test
    void anotherProcessCannotUseTheStateAndExitDestroysIt() {
        Channel c = hello(0, TOKEN);
        Channel other = hello(1, OTHER);
        long state = c.call(Requests.ivc_link_create(new byte[0], 0)).out(0);
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.ivc_link_complete(state)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.ivc_link_destroy(state)).result());
        byte[] unsafe = new byte[16];
        unsafe[0] = 3; // CU_JIT_INFO_LOG_BUFFER: a pointer, never passed
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_link_create(unsafe, 16)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> backend.destroyed.contains(STATE), "the link state destroyed at exit");
    }
}
