package io.ivcuda.provisioner;

import com.sun.jna.Pointer;
import java.util.function.Consumer;
import org.libvirt.jna.ConnectionPointer;
import org.libvirt.jna.DomainPointer;
import org.libvirt.jna.Libvirt;

/**
 * {@code VIR_DOMAIN_EVENT_ID_METADATA_CHANGE} (23), registered through JNA because libvirt-java 0.5.4
 * has no listener for it — and {@code virsh metadata --set} emits only this event, no DEFINED.
 * The native side keeps only a function pointer: the callback object must stay strongly reachable
 * for as long as it is registered, which is why this object holds it in a field.
 */
final class MetadataChangeEvents {
    static final int VIR_DOMAIN_EVENT_ID_METADATA_CHANGE = 23;

    /** {@code virConnectDomainEventMetadataChangeCallback(conn, dom, type, nsuri, opaque)}. */
    interface MetadataChangeCallback extends Libvirt.VirDomainEventCallback {
        void eventCallback(ConnectionPointer connection, DomainPointer domain, int type, String nsuri, Pointer opaque);
    }

    private final MetadataChangeCallback callback;
    private int callbackId = -1;

    /** @param onChange receives the domain's name; runs on the libvirt event loop thread, so it must only hand work off */
    MetadataChangeEvents(Consumer<String> onChange) {
        this.callback = (connection, domain, type, nsuri, opaque) -> {
            String name = Libvirt.INSTANCE.virDomainGetName(domain);
            if (name != null) {
                onChange.accept(name);
            }
        };
    }

    void register(EventConnection connection) {
        int id = Libvirt.INSTANCE.virConnectDomainEventRegisterAny(connection.pointer(), null,
                VIR_DOMAIN_EVENT_ID_METADATA_CHANGE, callback, null, null);
        if (id < 0) {
            throw new IllegalStateException("libvirt refused to register the METADATA_CHANGE event (id "
                    + VIR_DOMAIN_EVENT_ID_METADATA_CHANGE + "); is libvirt older than 3.0?");
        }
        callbackId = id;
    }

    void deregister(EventConnection connection) {
        if (callbackId >= 0 && connection.pointer() != null) {
            Libvirt.INSTANCE.virConnectDomainEventDeregisterAny(connection.pointer(), callbackId);
        }
        callbackId = -1;
    }
}
