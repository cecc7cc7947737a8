package io.ivcuda.server.handler;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.core.Vm;
import org.agrona.UnsafeApi;

/**
 * The bounded upload of a code image (a module's or a library's): the image arrives through the
 * window, its hash is checked, and it is kept per VM by (hash, size) so that a second load sends
 * only its hash. Bytes held are bounded by {@code limit.module.image.bytes}, kept and in transit.
 */
final class ImageUpload {
    static final long MAX_IMAGE = 1L << 31;

    /** What loads an image already in server memory: the driver's result, the object in {@code session.out.handle}. */
    interface Loader {
        int load(long imageAddress);
    }

    private ImageUpload() {
    }

    /**
     * Receives (sendImage 1) or finds (0: CUDA_ERROR_NOT_FOUND if not kept) the image and loads it.
     * The loader runs on memory the server owns for at least the call (the driver copies it).
     */
    static int load(Session session, long imageHash, long imageSize, int sendImage, Loader loader) {
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
                session.refuse("imageSize", imageSize + " bytes do not fit in " + ServerKeys.LIMIT_MODULE_IMAGE_BYTES.name() + " "
                        + vm.limits().imageBytes() + " with the uploads in transit", CuResult.OUT_OF_MEMORY);
                return chunks.discard(imageSize) ? CuResult.OUT_OF_MEMORY : CuResult.DEVICE_UNAVAILABLE;
            }
            try {
                long copy = UnsafeApi.allocateMemory(imageSize);
                if (!receive(chunks, copy, imageSize)) {
                    UnsafeApi.freeMemory(copy);
                    return CuResult.DEVICE_UNAVAILABLE;
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
                    int result = loader.load(copy);
                    UnsafeApi.freeMemory(copy);
                    return result;
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
        return loader.load(image.address());
    }

    /** Copies {@code size} bytes arriving through the window (§6) to {@code to}; false if the guest went away. */
    static boolean receive(ChunkStream chunks, long to, long size) {
        int half = chunks.slotSize();
        long chunk = chunks.next();
        for (long done = 0; done < size; done += half, chunk++) {
            if (!chunks.awaitGuest(chunk + 1)) {
                return false;
            }
            UnsafeApi.copyMemory(chunks.slotAddress(chunk), to + done, Math.min(half, size - done));
            chunks.publish(chunk + 1);
        }
        return true;
    }

    static long fnv1a(long address, long size) {
        long h = 0xcbf29ce484222325L;
        for (long i = 0; i < size; i++) {
            h ^= UnsafeApi.getByte(address + i) & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }
}
