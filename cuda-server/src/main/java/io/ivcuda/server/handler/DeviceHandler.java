package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.DeviceCalls;
import io.ivcuda.server.gen.Reply;
import java.util.Arrays;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * cuInit and the device queries. The guest sees one device, ordinal 0, which is the host GPU the
 * server was configured with; the dispatcher has checked every {@code CUdevice} and hands over the
 * native device.
 */
final class DeviceHandler implements DeviceCalls {
    private static final Logger LOG = LogManager.getLogger(DeviceHandler.class);

    private final Session session;

    DeviceHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuInit(Reply r, int flags) {
        int init = session.vm.initResult();
        int result = init != CuResult.SUCCESS ? init : flags == 0 ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        // normally once per guest process: operators (and the VM test) see that a guest reached the driver
        int pid = session.ownerPid();
        session.vm.refusals().log(LOG, org.apache.logging.log4j.Level.INFO, "cuInit", () -> "channel " + session.index()
                + " pid " + pid + ": cuInit(" + flags + ") → " + CuResult.name(result));
        return result;
    }

    @Override
    public int cuDeviceGet(Reply r, int ordinal) {
        if (session.vm.initResult() != CuResult.SUCCESS) {
            return session.vm.initResult();
        }
        r.set(0, 0);
        return ordinal == 0 ? CuResult.SUCCESS : CuResult.INVALID_DEVICE;
    }

    @Override
    public int cuDeviceGetCount(Reply r) {
        if (session.vm.initResult() != CuResult.SUCCESS) {
            return session.vm.initResult();
        }
        r.set(0, 1);
        return CuResult.SUCCESS;
    }

    /** A NUL-terminated string the driver writes straight into the outbuf, cut to the guest's capacity. */
    private int stringOut(Reply r, int len, int dev, boolean name) {
        int cap = Math.min(len, r.outbufCapacity());
        if (cap <= 0) {
            return CuResult.INVALID_VALUE;
        }
        long dst = r.buffer().addressOffset() + r.outbufIndex();
        int result = name ? session.cuda.deviceGetName(dst, cap, dev) : session.cuda.deviceGetPciBusId(dst, cap, dev);
        if (result == CuResult.SUCCESS) {
            int n = 0;
            while (n < cap - 1 && r.buffer().getByte(r.outbufIndex() + n) != 0) {
                n++;
            }
            r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
            r.outbufLength(n + 1);
        }
        return result;
    }

    @Override
    public int cuDeviceGetName(Reply r, int len, int dev) {
        return stringOut(r, len, dev, true);
    }

    @Override
    public int cuDeviceGetPCIBusId(Reply r, int len, int dev) {
        return stringOut(r, len, dev, false);
    }

    /**
     * The guest sees one device, ordinal 0: a bus id names it when it is our GPU's, in any of
     * the spellings the driver takes ([domain:]bus:device.function, hex, any case).
     */
    @Override
    public int cuDeviceGetByPCIBusId(Reply r, String pciBusId) {
        long[] wanted = PciBusId.parse(pciBusId);
        if (wanted == null) {
            session.warn("pciBusId", "'" + pciBusId + "' is not [domain:]bus:device.function", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        long scratch = session.out.scratch;
        int result = session.cuda.deviceGetPciBusId(scratch, 64, session.vm.nativeDevice());
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long[] ours = PciBusId.parse(new com.sun.jna.Pointer(scratch).getString(0));
        if (!Arrays.equals(wanted, ours)) {
            return CuResult.INVALID_DEVICE;
        }
        r.set(0, 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuDeviceGetUuid(Reply r, int dev) {
        return session.cuda.deviceGetUuid(r.buffer().addressOffset() + r.bytesIndex(0), dev);
    }

    @Override
    public int cuDeviceTotalMem_v2(Reply r, int dev) {
        int result = session.cuda.deviceTotalMem(session.out, dev);
        // with a memory quota the guest's device has the quota (docs/sharing.md)
        long quota = session.vm.memoryQuota();
        r.set(0, quota > 0 && result == CuResult.SUCCESS ? Math.min(quota, session.out.bytes) : session.out.bytes);
        return result;
    }

    @Override
    public int cuDeviceGetAttribute(Reply r, int attrib, int dev) {
        int result = session.cuda.deviceGetAttribute(session.out, attrib, dev);
        // memory features a guest does not get answer 0 (docs/memory.md)
        r.set(0, result == CuResult.SUCCESS && MemoryAttributes.answersZero(attrib) ? 0 : session.out.value);
        return result;
    }
}
