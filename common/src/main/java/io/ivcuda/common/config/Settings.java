package io.ivcuda.common.config;

import io.ivcuda.common.IvcudaConfigException;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.apache.commons.configuration2.CompositeConfiguration;
import org.apache.commons.configuration2.Configuration;
import org.apache.commons.configuration2.MapConfiguration;
import org.apache.commons.configuration2.PropertiesConfiguration;
import org.apache.commons.configuration2.ex.ConfigurationException;

/**
 * A loaded configuration: layers (files, {@code --set}) read through one Commons Configuration
 * {@link CompositeConfiguration}, the first layer that has a key wins, the declared default otherwise.
 * Every key is checked when it is loaded — unknown keys, values that do not parse, values out of bounds —
 * so a mistake is one {@link IvcudaConfigException} whose message names the layer (the file), the key and
 * the value; after that the typed {@link #get} cannot fail.
 */
public final class Settings {
    private final KeySet keys;
    private final List<Layer> layers;
    private final CompositeConfiguration composite;
    private final Map<String, Object> values = new HashMap<>();
    private final Map<String, String> foreign = new TreeMap<>();

    /**
     * One source of values with its name for messages: a file's path, {@code --set}.
     *
     * @param name  the file or {@code --set}, as messages name it
     * @param config its keys and values
     */
    public record Layer(String name, Configuration config) {
        /**
         * A properties file (Commons Configuration's reader: {@code key=value}, {@code #} comments, escapes).
         *
         * @param label what the file is, for messages ({@code host configuration}); null: the path alone
         */
        public static Layer file(Path file, String label) throws IvcudaConfigException {
            String name = label == null ? file.toString() : label + " " + file;
            if (!Files.isRegularFile(file)) {
                throw new IvcudaConfigException(name + ": missing or not a regular file");
            }
            PropertiesConfiguration properties = new PropertiesConfiguration();
            try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                properties.read(reader);
            } catch (IOException | ConfigurationException | RuntimeException e) {
                throw new IvcudaConfigException(name + ": unreadable: " + e.getMessage(), e);
            }
            return new Layer(name, properties);
        }

        /** {@code KEY=VALUE} words, as {@code --set} takes them; later ones win. */
        public static Layer sets(List<String> sets) throws IvcudaConfigException {
            Map<String, Object> map = new LinkedHashMap<>();
            for (String set : sets) {
                int eq = set.indexOf('=');
                if (eq <= 0) {
                    throw new IvcudaConfigException("--set " + set + ": expected KEY=VALUE");
                }
                map.put(set.substring(0, eq).trim(), set.substring(eq + 1).trim());
            }
            return new Layer("--set", new MapConfiguration(map));
        }

        /** A command's {@code --config} files in order (later ones win), then its {@code --set}s (win over all). */
        public static List<Layer> commandLine(List<Path> files, List<String> sets) throws IvcudaConfigException {
            List<Layer> layers = new ArrayList<>();
            layers.add(sets(sets));
            for (Path file : files) {
                layers.add(1, file(file, null));
            }
            return layers;
        }
    }

    private Settings(KeySet keys, List<Layer> layers) {
        this.keys = keys;
        this.layers = Collections.unmodifiableList(new ArrayList<>(layers));
        this.composite = new CompositeConfiguration();
        for (Layer layer : layers) {
            composite.addConfiguration(layer.config());
        }
    }

    /**
     * Loads {@code layers}, the one that wins first, and checks every key against {@code keys}.
     *
     * @param foreign keys that are not this consumer's but another's, kept aside unchecked ({@link #foreign()});
     *                any other key that {@code keys} does not declare is an error
     */
    public static Settings load(KeySet keys, List<Layer> layers, Predicate<String> foreign) throws IvcudaConfigException {
        Settings s = new Settings(keys, layers);
        for (Iterator<String> it = s.composite.getKeys(); it.hasNext(); ) {
            String key = it.next();
            String text = s.composite.getString(key);
            ConfigKey<?> declared = keys.find(key);
            if (declared == null) {
                if (foreign.test(key)) {
                    s.foreign.put(key, text);
                    continue;
                }
                ConfigKey<?> near = keys.nearest(key);
                throw new IvcudaConfigException("unknown key " + key, s.sourceOf(key) + ": unknown key " + key
                        + (near == null ? "" : " (did you mean " + near.name() + "?)") + " (" + keys.title()
                        + " keys: docs/operations.md)", null);
            }
            try {
                s.values.put(key, declared.parse(text));
            } catch (IllegalArgumentException e) {
                throw s.bad(key, text, e.getMessage());
            }
        }
        return s;
    }

    /** Loads {@code layers} (the one that wins first); every key must be one of {@code keys}. */
    public static Settings load(KeySet keys, List<Layer> layers) throws IvcudaConfigException {
        return load(keys, layers, key -> false);
    }

    /** The layer that gave {@code key} its value, by name; {@code default} when none did. */
    public String sourceOf(String key) {
        for (Layer layer : layers) {
            if (layer.config().containsKey(key)) {
                return layer.name();
            }
        }
        return "default";
    }

    /** Whether some layer sets {@code key} (a default does not count). */
    public boolean isSet(ConfigKey<?> key) {
        return values.containsKey(key.name());
    }

    /** The value of {@code key}: the winning layer's, checked at load, else the declared default (null when none). */
    @SuppressWarnings("unchecked")
    public <T> T get(ConfigKey<T> key) {
        if (key.isFamily()) {
            throw new IllegalArgumentException(key.name() + " is a family: use members()");
        }
        Object v = values.get(key.name());
        return v == null ? key.defaultValue() : (T) v;
    }

    /** {@link #get} of a numeric key whose bounds fit an int. */
    public int getInt(ConfigKey<Long> key) {
        if (key.min() < Integer.MIN_VALUE || key.max() > Integer.MAX_VALUE) {
            throw new IllegalStateException(key.name() + " is not bounded to an int");
        }
        return (int) (long) get(key);
    }

    /** The members of a family that are set, by index: {@code gpu.<n>.uuid} → {0: GPU-…, 1: GPU-…}. */
    @SuppressWarnings("unchecked")
    public <T> Map<Integer, T> members(ConfigKey<T> family) {
        Map<Integer, T> result = new TreeMap<>();
        for (Map.Entry<String, Object> e : values.entrySet()) {
            int index = family.indexOf(e.getKey());
            if (index >= 0) {
                result.put(index, (T) e.getValue());
            }
        }
        return result;
    }

    /** The keys another consumer reads, as written (see {@link #load(KeySet, List, Predicate)}). */
    public Map<String, String> foreign() {
        return Collections.unmodifiableMap(foreign);
    }

    /** The names of the layers, the one that wins first. */
    public List<String> layerNames() {
        return layers.stream().map(Layer::name).toList();
    }

    /** A problem with {@code key}'s value, in the one form every consumer uses: {@code FILE: KEY='VALUE': WHY}. */
    public IvcudaConfigException bad(String key, String value, String why) {
        return new IvcudaConfigException(key + "='" + value + "': " + why,
                sourceOf(key) + ": " + key + "='" + value + "': " + why, null);
    }

    /** {@link #bad(String, String, String)} for the value {@code key} has now. */
    public IvcudaConfigException bad(ConfigKey<?> key, String why) {
        String text = composite.getString(key.name());
        return bad(key.name(), text == null ? "" : text, why);
    }
}
