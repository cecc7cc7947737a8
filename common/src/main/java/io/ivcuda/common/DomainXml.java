package io.ivcuda.common;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerException;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;
import org.xml.sax.SAXException;

/**
 * A libvirt domain XML document as hook and provisioner see it: name, UUID, our metadata element,
 * our {@code <shmem>} device (and other domains' ivcuda devices that do not belong here) and the
 * description that carries our note. Everything else in the document is left exactly as it came.
 */
public final class DomainXml {
    private static final String UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
    private final Document document;
    private final String name;
    private final String uuid;

    private DomainXml(Document document) throws IvcudaConfigException {
        this.document = document;
        Element root = document.getDocumentElement();
        if (!"domain".equals(root.getNodeName())) {
            throw new IvcudaConfigException("not a libvirt domain XML document (root element <" + root.getNodeName() + ">)");
        }
        Element nameElement = child(root, "name");
        Element uuidElement = child(root, "uuid");
        this.name = nameElement == null ? "?" : nameElement.getTextContent().trim();
        if (uuidElement == null || uuidElement.getTextContent().isBlank()) {
            throw new IvcudaConfigException("domain '" + name + "': the domain XML has no <uuid>");
        }
        this.uuid = uuidElement.getTextContent().trim().toLowerCase(java.util.Locale.ROOT);
        if (!uuid.matches(UUID_PATTERN)) {
            throw new IvcudaConfigException("domain '" + name + "': unexpected <uuid> '" + uuid + "'");
        }
    }

    /** Whether {@code text} is a domain UUID as libvirt writes it (lower case). */
    public static boolean isUuid(String text) {
        return text.matches(UUID_PATTERN);
    }

    public static DomainXml parse(String xml) throws IvcudaConfigException {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setNamespaceAware(true);
            // Domain XML never has a DTD; refusing one keeps external entities out.
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            DocumentBuilder builder = factory.newDocumentBuilder();
            builder.setErrorHandler(null);
            return new DomainXml(builder.parse(new InputSource(new StringReader(xml))));
        } catch (ParserConfigurationException | SAXException | IOException e) {
            throw new IvcudaConfigException("domain XML is not well-formed: " + e.getMessage(), e);
        }
    }

    public String name() {
        return name;
    }

    public String uuid() {
        return uuid;
    }

    /** Whether the document carries our metadata element (whatever its attributes). */
    public boolean isTagged() {
        return gpuElement() != null;
    }

    /** Our {@code <ivcuda:gpu>} element inside {@code <metadata>}, or null for an untagged domain. */
    public Element gpuElement() {
        Element metadata = child(document.getDocumentElement(), "metadata");
        if (metadata == null) {
            return null;
        }
        for (Node n = metadata.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && GpuElement.NAMESPACE.equals(e.getNamespaceURI())) {
                return e;
            }
        }
        return null;
    }

    /** Parses our metadata element; null for an untagged domain. */
    public GpuElement parseGpuElement() throws IvcudaConfigException {
        Element element = gpuElement();
        if (element == null) {
            return null;
        }
        if (!GpuElement.NAME.equals(element.getLocalName())) {
            String unknown = GpuElement.shown(element.getLocalName() == null ? element.getNodeName() : element.getLocalName());
            throw new IvcudaConfigException("unknown element <" + GpuElement.PREFIX + ":" + unknown + "> (the element is <"
                    + GpuElement.PREFIX + ":gpu>)", "domain '" + name + "': unknown element <" + GpuElement.shown(element.getNodeName())
                    + "> in namespace " + GpuElement.NAMESPACE + " (the element is <" + GpuElement.PREFIX + ":gpu>)", null);
        }
        return GpuElement.parse(element, name);
    }

    /** Our {@code <shmem name='ivcuda-UUID'>}, or null. */
    public Element ourShmem() {
        Element devices = child(document.getDocumentElement(), "devices");
        if (devices == null) {
            return null;
        }
        String wanted = InstancePaths.shmemName(uuid);
        for (Node n = devices.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && "shmem".equals(e.getNodeName()) && wanted.equals(e.getAttribute("name"))) {
                return e;
            }
        }
        return null;
    }

    /**
     * Every {@code <shmem>} with an ivcuda name ({@code ivcuda-…}) other than this domain's
     * own {@code ivcuda-UUID}, whatever its model: another domain's device, as a clone copies it. QEMU
     * would map (or create) that domain's region file, so such a device is never started with, and the
     * provisioner removes it.
     */
    public List<Element> foreignShmems() {
        return foreignShmems(java.util.Set.of(InstancePaths.shmemName(uuid)));
    }

    /**
     * Every {@code <shmem>} with an ivcuda name not in {@code own}: for a back-end or front-end domain (issue 16)
     * its own devices are the ones its role and the slot ledger give it ({@link BackendPaths}), every other
     * ivcuda device is another domain's.
     */
    public List<Element> foreignShmems(java.util.Set<String> own) {
        List<Element> foreign = new ArrayList<>();
        Element devices = child(document.getDocumentElement(), "devices");
        if (devices == null) {
            return foreign;
        }
        for (Element shmem : children(devices, "shmem")) {
            String shmemName = shmem.getAttribute("name");
            if (isIvcudaName(shmemName) && !own.contains(shmemName)) {
                foreign.add(shmem);
            }
        }
        return foreign;
    }

    /** Removes every ivcuda device not in {@code own}; returns their names. */
    public List<String> removeShmemsExcept(java.util.Set<String> own) {
        List<String> removed = new ArrayList<>();
        for (Element shmem : foreignShmems(own)) {
            removed.add(shmem.getAttribute("name"));
            removeWithIndent(shmem);
        }
        return removed;
    }

    /** The {@code <shmem>} of this name, or null. */
    public Element shmemNamed(String shmemName) {
        Element devices = child(document.getDocumentElement(), "devices");
        if (devices == null) {
            return null;
        }
        for (Element shmem : children(devices, "shmem")) {
            if (shmemName.equals(shmem.getAttribute("name"))) {
                return shmem;
            }
        }
        return null;
    }

    /** The device of this name as defined, or null. */
    public ShmemDevice shmemDevice(String shmemName) {
        Element shmem = shmemNamed(shmemName);
        return shmem == null ? null : ShmemDevice.read(shmem);
    }

    /** Adds the {@code <shmem>} of {@code device}'s name (or rewrites the existing one) to match it. */
    public void putShmemNamed(ShmemDevice device) {
        Element shmem = shmemNamed(device.name());
        if (shmem == null) {
            Element root = document.getDocumentElement();
            Element devices = child(root, "devices");
            if (devices == null) {
                devices = document.createElement("devices");
                root.appendChild(devices);
            }
            shmem = document.createElement("shmem");
            devices.appendChild(shmem);
        }
        device.writeInto(shmem);
    }

    /** The names of {@link #foreignShmems()}, in document order. */
    public List<String> foreignShmemNames() {
        return foreignShmems().stream().map(e -> e.getAttribute("name")).toList();
    }

    /** Removes every {@link #foreignShmems() foreign device}; returns their names. */
    public List<String> removeForeignShmems() {
        return removeShmemsExcept(java.util.Set.of(InstancePaths.shmemName(uuid)));
    }

    private static boolean isIvcudaName(String shmemName) {
        return shmemName.startsWith(InstancePaths.SHMEM_PREFIX);
    }

    /**
     * The domain UUID an ivcuda device name was made from ({@code ivcuda-UUID}, lower case as libvirt
     * writes UUIDs), or null when the rest of the name is no such UUID.
     */
    public static String uuidOfShmemName(String shmemName) {
        if (!isIvcudaName(shmemName)) {
            return null;
        }
        String rest = shmemName.substring(InstancePaths.SHMEM_PREFIX.length());
        return rest.matches(UUID_PATTERN) ? rest : null;
    }

    /** {@code <os><type machine=…>}, or null when the definition names no machine type. */
    public String machineType() {
        Element os = child(document.getDocumentElement(), "os");
        Element type = os == null ? null : child(os, "type");
        return type == null || !type.hasAttribute("machine") ? null : type.getAttribute("machine");
    }

    /** The {@code <iommu>} among the devices, or null. */
    public Element iommu() {
        Element devices = child(document.getDocumentElement(), "devices");
        return devices == null ? null : child(devices, "iommu");
    }

    /**
     * Why {@link #addInterruptRemapping()} cannot give this domain a virtual IOMMU with interrupt remapping, or null
     * when it can (or need not: the domain has an {@code <iommu>} of its own, left as it is). QEMU's intel-iommu
     * exists only on q35, and libvirt allows interrupt remapping only with QEMU's own (split) I/O APIC.
     */
    public String interruptRemappingProblem() {
        if (iommu() != null || child(document.getDocumentElement(), "os") == null) {
            // no <os>: the element alone (ivshmem-provisioner check FILE), not a definition; libvirt's always has one
            return null;
        }
        String machine = machineType();
        if (machine == null || !machine.contains("q35")) {
            return (machine == null ? "no machine type named" : "machine type '" + machine + "'")
                    + ": a virtual Intel IOMMU exists only on q35 (<os><type machine='q35'>), or give the domain an <iommu> of your own";
        }
        Element features = child(document.getDocumentElement(), "features");
        Element ioapic = features == null ? null : child(features, "ioapic");
        if (ioapic != null && !"qemu".equals(ioapic.getAttribute("driver"))) {
            return "<ioapic driver='" + ioapic.getAttribute("driver") + "'/>: interrupt remapping needs QEMU's own I/O APIC (driver='qemu')";
        }
        return null;
    }

    /**
     * Adds {@code <iommu model='intel'><driver intremap='on'/></iommu>} to the devices and {@code <ioapic
     * driver='qemu'/>} to the features, each where absent; true when the document changed. Nothing when the domain
     * has an {@code <iommu>} already (whatever it is). Check {@link #interruptRemappingProblem()} first.
     */
    public boolean addInterruptRemapping() {
        if (iommu() != null) {
            return false;
        }
        Element root = document.getDocumentElement();
        Element devices = child(root, "devices");
        if (devices == null) {
            devices = document.createElement("devices");
            root.appendChild(devices);
        }
        Element iommu = document.createElement("iommu");
        iommu.setAttribute("model", "intel");
        Element driver = document.createElement("driver");
        driver.setAttribute("intremap", "on");
        iommu.appendChild(driver);
        devices.appendChild(iommu);
        Element features = child(root, "features");
        if (features == null) {
            features = document.createElement("features");
            // libvirt's own order puts <features> before <devices> (it reads any order)
            root.insertBefore(features, devices);
        }
        if (child(features, "ioapic") == null) {
            Element ioapic = document.createElement("ioapic");
            ioapic.setAttribute("driver", "qemu");
            features.appendChild(ioapic);
        }
        return true;
    }

    /** The text of {@code <description>}, or null when the domain has none. */
    public String description() {
        Element description = child(document.getDocumentElement(), "description");
        return description == null ? null : description.getTextContent();
    }

    /** Sets {@code <description>} to {@code text}; null removes the element. */
    public void setDescription(String text) {
        Element root = document.getDocumentElement();
        Element description = child(root, "description");
        if (text == null) {
            if (description != null) {
                removeWithIndent(description);
            }
            return;
        }
        if (description == null) {
            description = document.createElement("description");
            // libvirt's own order: name, uuid, genid, title, description (it reads any order)
            Element after = child(root, "title") != null ? child(root, "title") : child(root, "uuid");
            root.insertBefore(description, after == null ? root.getFirstChild() : after.getNextSibling());
        }
        description.setTextContent(text);
    }

    private static void removeWithIndent(Element element) {
        Node previous = element.getPreviousSibling();
        if (previous != null && previous.getNodeType() == Node.TEXT_NODE && previous.getTextContent().isBlank()) {
            previous.getParentNode().removeChild(previous);
        }
        element.getParentNode().removeChild(element);
    }

    /** Our device as currently defined, or null. */
    public ShmemDevice currentShmem() {
        Element shmem = ourShmem();
        return shmem == null ? null : ShmemDevice.read(shmem);
    }

    /** Adds our {@code <shmem>} (or rewrites the existing one) to match {@code device}. */
    public void putShmem(ShmemDevice device) {
        putShmemNamed(device);
    }

    /** Removes our {@code <shmem>}; true when there was one. */
    public boolean removeShmem() {
        Element shmem = ourShmem();
        if (shmem == null) {
            return false;
        }
        removeWithIndent(shmem);
        return true;
    }

    public String toXml() {
        try {
            Transformer transformer = TransformerFactory.newInstance().newTransformer();
            transformer.setOutputProperty(OutputKeys.OMIT_XML_DECLARATION, "yes");
            StringWriter out = new StringWriter();
            transformer.transform(new DOMSource(document), new StreamResult(out));
            return out.toString();
        } catch (TransformerException e) {
            throw new IllegalStateException("cannot serialise a DOM we parsed", e);
        }
    }

    /** The first child element of {@code parent} with the given (un-namespaced) name, or null. */
    public static Element child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && name.equals(e.getNodeName()) && e.getNamespaceURI() == null) {
                return e;
            }
        }
        return null;
    }

    /** All child elements of {@code parent} with the given name. */
    public static java.util.List<Element> children(Element parent, String name) {
        java.util.List<Element> result = new java.util.ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i) instanceof Element e && name.equals(e.getNodeName())) {
                result.add(e);
            }
        }
        return result;
    }
}
