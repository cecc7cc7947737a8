package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_FUNCTION;
import static io.ivcuda.server.core.HandleTable.KIND_MODULE;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.JitLogs;
import io.ivcuda.server.gen.ModuleCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;

/**
 * Modules: images arrive through the window and are kept per VM by (hash, size), so a second
 * process loading the same image sends only its hash; functions and globals of a module. A
 * function's handle remembers its module, whose unload removes it. cuModuleLoadDataEx's JIT logs
 * and wall time are the driver's, kept on the session for ivc_jit_log_read (docs/kernels.md).
 */
final class ModuleHandler implements ModuleCalls {
    private final Session session;

    ModuleHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_module_load(Reply r, DirectBuffer in, long imageHash, long imageSize, int sendImage,
                               int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        // the options are read (once) before the image moves, which follows whatever they hold; the
        // ones the server passes on go to the driver with the logs and the time (CU_JIT_LOG_VERBOSE
        // makes the info log), the others are left out as they always were for modules
        Object parsed = JitLogs.parseDroppingOthers(in, jitOptionsIndex, jitOptionsLength, jitOptionsSize,
                LibraryHandler.MAX_JIT_OPTIONS, LibraryHandler::safeJitOption, session.vm.limits().jitLogBytes());
        if (parsed instanceof String bad) {
            session.warn("jitOptions", bad, CuResult.INVALID_VALUE);
            return sendImage != 0 && !session.chunks.discard(imageSize) ? CuResult.DEVICE_UNAVAILABLE
                    : CuResult.INVALID_VALUE;
        }
        JitLogs logs = (JitLogs) parsed;
        session.keepLoadLogs(logs); // read by the guest after the call, failed loads too (the error log)
        int result = ImageUpload.load(session, imageHash, imageSize, sendImage,
                ModuleGlobalsQuota.reserving(session, "ivc_module_load", imageSize, false, address -> logs.count() == 0
                        ? session.cuda.moduleLoadData(session.out, address)
                        : session.cuda.moduleLoadDataEx(session.out, address, logs.count(), logs.options(), logs.values())));
        return result == CuResult.SUCCESS ? minted(r, session.out.handle) : result;
    }

    /** Answers a loaded module's new handle (it lives in the current context). */
    private int minted(Reply r, long nativeModule) {
        r.set(0, session.vm.handles().mint(KIND_MODULE, session.token(), nativeModule, session.currentNativeContext()));
        return CuResult.SUCCESS;
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
        if (session.vm.libraries().isLibraryModule(hmod)) {
            return session.refuse("hmod", "is a library's module (cuLibraryGetModule): it goes with cuLibraryUnload",
                    CuResult.INVALID_HANDLE);
        }
        // its functions go first, each once no launch of another thread of the process still uses it
        session.vm.handles().removeDependents(session.token(), KIND_FUNCTION, hmod, session.chunks::stopping);
        session.vm.moduleUnloaded();
        int result = session.cuda.moduleUnload(hmod);
        if (result == CuResult.SUCCESS) {
            session.vm.globalsReleased(false, hmod);
        }
        return result;
    }
}
