package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_FUNCTION;
import static io.ivcuda.server.core.HandleTable.KIND_MODULE;

import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.gen.ModuleCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Modules: images arrive through the window and are kept per VM by (hash, size), so a second
 * process loading the same image sends only its hash; functions and globals of a module. A
 * function's handle remembers its module, whose unload removes it.
 */
final class ModuleHandler implements ModuleCalls {
    private static final long MAX_IMAGE = 1L << 31;

    private final Session session;

    ModuleHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_module_load(Reply r, DirectBuffer in, long imageHash, long imageSize, int sendImage,
                               int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        ChunkStream chunks = session.chunks;
        if (imageSize <= 0 || imageSize > MAX_IMAGE) {
            session.warn("imageSize", imageSize + " is not in 1.." + MAX_IMAGE, CuResult.INVALID_VALUE);
            if (sendImage != 0 && !chunks.discard(imageSize)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            return CuResult.INVALID_VALUE;
        }
        Vm vm = session.vm;
        String key = Long.toHexString(imageHash) + ":" + imageSize;
        Vm.Image image = vm.images().get(key);
        if (sendImage != 0) {
            // the announced size is reserved before a byte is allocated: a guest cannot make the
            // server allocate more than the VM's image limit however large the size it claims
            if (!vm.reserveImageInTransit(imageSize)) {
                session.refuse("imageSize", imageSize + " bytes do not fit in limit.module.image.bytes "
                        + vm.limits().imageBytes() + " with the uploads in transit", CuResult.OUT_OF_MEMORY);
                return chunks.discard(imageSize) ? CuResult.OUT_OF_MEMORY : CuResult.DEVICE_UNAVAILABLE;
            }
            try {
                long copy = UnsafeApi.allocateMemory(imageSize);
                int half = chunks.slotSize();
                long chunk = chunks.next();
                for (long done = 0; done < imageSize; done += half, chunk++) {
                    long n = Math.min(half, imageSize - done);
                    if (!chunks.awaitGuest(chunk + 1)) {
                        UnsafeApi.freeMemory(copy);
                        return CuResult.DEVICE_UNAVAILABLE;
                    }
                    UnsafeApi.copyMemory(chunks.slotAddress(chunk), copy + done, n);
                    chunks.publish(chunk + 1);
                }
                long h = fnv1a(copy, imageSize);
                if (h != imageHash) {
                    UnsafeApi.freeMemory(copy);
                    session.warn("imageHash", "0x" + Long.toHexString(imageHash) + " does not match the image (0x"
                            + Long.toHexString(h) + ")", CuResult.INVALID_VALUE);
                    return CuResult.INVALID_VALUE;
                }
                if (!vm.reserveImage(imageSize)) {
                    // over the VM's image limit: load it, but do not keep it
                    int result = session.cuda.moduleLoadData(session.out, copy);
                    long nativeModule = session.out.handle;
                    UnsafeApi.freeMemory(copy);
                    return result == CuResult.SUCCESS ? minted(r, nativeModule) : result;
                }
                Vm.Image fresh = new Vm.Image(imageHash, imageSize, copy);
                Vm.Image prior = vm.images().putIfAbsent(key, fresh);
                if (prior != null) {
                    UnsafeApi.freeMemory(copy);
                    vm.releaseImage(imageSize);
                    image = prior;
                } else {
                    image = fresh;
                }
            } finally {
                vm.releaseImageInTransit(imageSize);
            }
        } else if (image == null) {
            return CuResult.NOT_FOUND;
        }
        int result = session.cuda.moduleLoadData(session.out, image.address());
        return result == CuResult.SUCCESS ? minted(r, session.out.handle) : result;
    }

    /** Answers a loaded module's new handle (it lives in the current context). */
    private int minted(Reply r, long nativeModule) {
        r.set(0, session.vm.handles().mint(KIND_MODULE, session.token(), nativeModule, session.currentNativeContext()));
        return CuResult.SUCCESS;
    }

    static long fnv1a(long address, long size) {
        long h = 0xcbf29ce484222325L;
        for (long i = 0; i < size; i++) {
            h ^= UnsafeApi.getByte(address + i) & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    @Override
    public int cuModuleGetFunction(Reply r, long hmod, String name) {
        int result = session.cuda.moduleGetFunction(session.out, hmod, name);
        if (result == CuResult.SUCCESS) {
            // extra: the native module, whose unload removes the function
            r.set(0, session.vm.handles().mint(KIND_FUNCTION, session.token(), session.out.handle, hmod));
        }
        return result;
    }

    @Override
    public int ivc_module_get_global(Reply r, long hmod, String name) {
        int result = session.cuda.moduleGetGlobal(session.out, hmod, name);
        if (result == CuResult.SUCCESS) {
            session.owner().ranges().add(new DeviceRanges.Range(session.out.address, session.out.bytes, false, 0));
            r.set(0, session.out.address);
            r.set(1, session.out.bytes);
        }
        return result;
    }

    @Override
    public int ivc_module_unload(Reply r, long hmod) {
        // its functions go first, each once no launch of another thread of the process still uses it
        session.vm.handles().removeDependents(session.token(), KIND_FUNCTION, hmod, session.chunks::stopping);
        session.vm.moduleUnloaded();
        return session.cuda.moduleUnload(hmod);
    }
}
