package io.ivcuda.server.handler;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.ModuleFootprint;
import io.ivcuda.server.core.Owner;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * A module's or library's load counted against the VM's memory quota (docs/sharing.md, "Memory quota as the
 * guest sees it"): its module-scope variables ({@link ModuleFootprint}, measured on the server's copy of the
 * image) are reserved before the driver loads it, refused with CUDA_ERROR_OUT_OF_MEMORY beyond the quota, and
 * held by the loaded object until it goes ({@link io.ivcuda.server.core.LoadedGlobals}).
 */
final class ModuleGlobalsQuota {
    private static final Logger LOG = LogManager.getLogger(ModuleGlobalsQuota.class);
    /** CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR and _MINOR. */
    static final int CC_MAJOR = 75;
    static final int CC_MINOR = 76;

    private ModuleGlobalsQuota() {
    }

    /** {@code load}, preceded by the reservation of the image's module-scope variables and followed by their record. */
    static ImageUpload.Loader reserving(Session session, String call, long imageSize, boolean library,
                                       ImageUpload.Loader load) {
        return address -> {
            ModuleFootprint.Measure m = ModuleFootprint.of(address, imageSize, computeCapability(session));
            if (m.kind() == ModuleFootprint.Kind.COMPRESSED) {
                Owner owner = session.owner();
                if (owner != null && owner.firstUnmeasuredImage()) {
                    LOG.info("pid {}: {} of a {}-byte image runs a compressed fat binary entry (sm_{}), which the server "
                            + "cannot measure: its module-scope variables are not counted against {} (logged once a "
                            + "process; docs/sharing.md)", owner.pid(), call, imageSize, m.arch(),
                            ServerKeys.MEMORY_QUOTA.name());
                }
            }
            long bytes = m.bytes();
            if (bytes > 0 && !session.vm.reserve(bytes, call + " (module-scope variables of the image)", session.out)) {
                return CuResult.OUT_OF_MEMORY;
            }
            int result = load.load(address);
            if (bytes > 0) {
                if (result == CuResult.SUCCESS) {
                    session.vm.loadedGlobals().held(library, session.out.handle, bytes);
                } else {
                    session.vm.release(bytes);
                }
            }
            return result;
        };
    }

    /** The device's compute capability as major·10 + minor; 0 when the driver does not say. */
    static int computeCapability(Session session) {
        int device = session.vm.nativeDevice();
        if (session.cuda.deviceGetAttribute(session.out, CC_MAJOR, device) != CuResult.SUCCESS) {
            return 0;
        }
        long major = session.out.value;
        if (session.cuda.deviceGetAttribute(session.out, CC_MINOR, device) != CuResult.SUCCESS) {
            return 0;
        }
        long minor = session.out.value;
        return major < 0 || major > 100 || minor < 0 || minor > 9 ? 0 : (int) (major * 10 + minor);
    }
}
