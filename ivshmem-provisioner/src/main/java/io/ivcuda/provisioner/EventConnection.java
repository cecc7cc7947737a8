package io.ivcuda.provisioner;

import org.libvirt.Connect;
import org.libvirt.LibvirtException;
import org.libvirt.jna.ConnectionPointer;

/**
 * A libvirt connection that hands out its native pointer, which libvirt-java keeps protected: we need
 * it to register the METADATA_CHANGE event that libvirt-java has no listener for.
 */
final class EventConnection extends Connect {
    EventConnection(String uri) throws LibvirtException {
        super(uri);
    }

    ConnectionPointer pointer() {
        return vcp;
    }
}
