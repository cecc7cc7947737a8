package io.ivcuda.server.handler;

import io.ivcuda.common.config.ServerKeys;
import static io.ivcuda.server.core.HandleTable.KIND_LINK;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.core.JitLogBudget;
import io.ivcuda.server.core.JitLogs;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.gen.LinkerCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * The linker (cuLink*): a link state is the driver's, named by a handle of the process. Each
 * input arrives through the window into memory the server owns for the call (bounded like an
 * image upload by {@code limit.module.image.bytes} in transit) and is added with the scalar JIT
 * options the server passes on; cuLinkComplete's image (the driver's, owned by the link state)
 * goes back to the guest through the window ({@code ivc_link_read}, the size complete answered).
 */
final class LinkHandler implements LinkerCalls {
    private final Session session;

    LinkHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_link_create(Reply r, DirectBuffer in, int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        // the options live as long as the link state: the driver fills its logs and outputs in later calls
        Object parsed = JitLogs.parse(in, jitOptionsIndex, jitOptionsLength, jitOptionsSize,
                LibraryHandler.MAX_JIT_OPTIONS, LibraryHandler::safeJitOption, session.vm.limits().jitLogBytes());
        if (parsed instanceof String bad) {
            return session.refuse("jitOptions", bad, CuResult.INVALID_VALUE);
        }
        JitLogs logs = (JitLogs) parsed;
        // a link state keeps its logs until it is destroyed: bounded per process and per VM before the driver makes one
        Owner owner = session.owner();
        JitLogBudget budget = session.vm.jitLogs();
        long bytes = logs.logBytes();
        if (bytes > 0) {
            String full = budget.reserve(owner, bytes);
            if (full != null) {
                logs.free();
                return session.refuse("jitOptions", full, CuResult.OUT_OF_MEMORY);
            }
            logs.charged(() -> budget.release(owner, bytes));
        }
        int result = session.cuda.linkCreate(session.out, logs.count(), logs.options(), logs.values());
        if (result == CuResult.SUCCESS) {
            session.vm.libraries().linkLogs(session.out.handle, logs);
            r.set(0, session.vm.handles().mint(KIND_LINK, session.token(), session.out.handle, 0));
        } else {
            logs.free();
        }
        return result;
    }

    /**
     * Log {@code which} (0 info, 1 error) of the link state as the driver wrote it so far, cut to the
     * guest's capacity with its NUL; the driver's own count of what it filled; the wall time. State 0:
     * the logs of this channel's last module or library load.
     */
    @Override
    public int ivc_jit_log_read(Reply r, int capacity, int which, long state) {
        if (which != 0 && which != 1) {
            return session.refuse("which", which + " is not 0 (info) or 1 (error)", CuResult.INVALID_VALUE);
        }
        JitLogs logs = state == 0 ? session.loadLogs() : session.vm.libraries().linkLogsOf(state);
        int room = r.outbufCapacity();
        r.set(0, 0);
        r.set(1, logs == null ? 0 : logs.wallTimeBits());
        if (logs == null || !logs.has(which) || room == 0) {
            r.outbufLength(0);
            return CuResult.SUCCESS;
        }
        int n = Math.min(logs.length(which), room - 1);
        long from = logs.address(which);
        int at = r.outbufIndex();
        for (int i = 0; i < n; i++) {
            r.buffer().putByte(at + i, UnsafeApi.getByte(from + i));
        }
        r.buffer().putByte(at + n, (byte) 0);
        r.outbufLength(n + 1);
        r.set(0, logs.filled(which));
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_link_add_data(Reply r, DirectBuffer in, long state, int type, long size, String name,
                                 int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        ChunkStream chunks = session.chunks;
        Vm vm = session.vm;
        if (size <= 0 || size > ImageUpload.MAX_IMAGE) {
            session.warn("size", size + " is not in 1.." + ImageUpload.MAX_IMAGE, CuResult.INVALID_VALUE);
            return chunks.discard(size) ? CuResult.INVALID_VALUE : CuResult.DEVICE_UNAVAILABLE;
        }
        if (!vm.reserveImageInTransit(size)) {
            session.warn("size", size + " bytes do not fit in " + ServerKeys.LIMIT_MODULE_IMAGE_BYTES.name() + " " + vm.limits().imageBytes()
                    + " with the uploads in transit", CuResult.OUT_OF_MEMORY);
            return chunks.discard(size) ? CuResult.OUT_OF_MEMORY : CuResult.DEVICE_UNAVAILABLE;
        }
        long copy = 0;
        try {
            // the options are read (once) before the input moves; the input moves whatever they hold
            long options = session.out.scratch + 64;
            long values = options + 4L * LibraryHandler.MAX_JIT_OPTIONS;
            String bad = LibraryHandler.jitOptions(in, jitOptionsIndex, jitOptionsLength, jitOptionsSize, options, values);
            if (bad != null) {
                session.warn("jitOptions", bad, CuResult.INVALID_VALUE);
                return chunks.discard(size) ? CuResult.INVALID_VALUE : CuResult.DEVICE_UNAVAILABLE;
            }
            copy = UnsafeApi.allocateMemory(size);
            if (!ImageUpload.receive(chunks, copy, size)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            return session.cuda.linkAddData(state, type, copy, size, name, jitOptionsLength / 16, options, values);
        } finally {
            if (copy != 0) {
                UnsafeApi.freeMemory(copy);
            }
            vm.releaseImageInTransit(size);
        }
    }

    @Override
    public int ivc_link_complete(Reply r, long state) {
        int result = session.cuda.linkComplete(session.out, state);
        if (result == CuResult.SUCCESS) {
            session.vm.libraries().linkOutput(state, session.out.address, session.out.bytes);
            r.set(0, session.out.bytes);
        }
        return result;
    }

    /** The completed image back through the window: exactly the size ivc_link_complete answered. */
    @Override
    public int ivc_link_read(Reply r, long state, long size) {
        ChunkStream chunks = session.chunks;
        long[] output = session.vm.libraries().linkOutputOf(state);
        if (output == null || output[1] != size || size <= 0) {
            session.warn("size", size + " is not the size of this link's completed image"
                    + (output == null ? " (not completed)" : " (" + output[1] + ")"), CuResult.INVALID_VALUE);
            return chunks.zeroFill(size) ? CuResult.INVALID_VALUE : CuResult.DEVICE_UNAVAILABLE;
        }
        int half = chunks.slotSize();
        long chunk = chunks.next();
        for (long done = 0; done < size; done += half, chunk++) {
            if (!chunks.awaitGuest(chunk - 1)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            UnsafeApi.copyMemory(output[0] + done, chunks.slotAddress(chunk), Math.min(half, size - done));
            chunks.publish(chunk + 1);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_link_destroy(Reply r, long state) {
        session.vm.libraries().forgetLink(state);
        int result = session.cuda.linkDestroy(state);
        session.vm.libraries().freeLinkLogs(state);
        return result;
    }
}
