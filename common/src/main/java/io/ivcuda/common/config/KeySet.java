package io.ivcuda.common.config;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The keys one consumer reads: the cuda-server's ({@link ServerKeys#ALL}), hook and provisioner's
 * ({@link HostKeys#ALL}). A set knows its keys in the order they were declared (the documentation's order)
 * and finds the declaration of a key as written in a file.
 */
public final class KeySet {
    private final String title;
    private final List<ConfigKey<?>> keys;

    private KeySet(String title, List<ConfigKey<?>> keys) {
        this.title = title;
        this.keys = Collections.unmodifiableList(keys);
        Set<String> names = new LinkedHashSet<>();
        for (ConfigKey<?> key : keys) {
            if (!names.add(key.name())) {
                throw new IllegalStateException(title + ": key " + key.name() + " declared twice");
            }
        }
    }

    /**
     * Every {@code public static final ConfigKey} field of {@code declarations}, in declaration order: a key is
     * declared once, as a field, and belongs to its set by being there.
     */
    public static KeySet of(String title, Class<?> declarations) {
        List<ConfigKey<?>> keys = new ArrayList<>();
        for (Field field : declarations.getDeclaredFields()) {
            int m = field.getModifiers();
            if (Modifier.isStatic(m) && Modifier.isPublic(m) && field.getType() == ConfigKey.class) {
                try {
                    keys.add((ConfigKey<?>) field.get(null));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return new KeySet(title, keys);
    }

    /** Who reads these keys, for messages and the documentation: {@code cuda-server}. */
    public String title() {
        return title;
    }

    public List<ConfigKey<?>> keys() {
        return keys;
    }

    /** The declaration of {@code key} as written in a file (a family member finds its family), or null. */
    public ConfigKey<?> find(String key) {
        for (ConfigKey<?> k : keys) {
            if (k.matches(key)) {
                return k;
            }
        }
        return null;
    }

    /** The declared key closest to a misspelt {@code key} (at most two edits away), or null. */
    public ConfigKey<?> nearest(String key) {
        ConfigKey<?> best = null;
        int bestDistance = 3;
        for (ConfigKey<?> k : keys) {
            int d = distance(key, k.name());
            if (d < bestDistance) {
                best = k;
                bestDistance = d;
            }
        }
        return best;
    }

    /** Levenshtein distance: insertions, deletions and substitutions. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        return previous[b.length()];
    }

    public boolean knows(String key) {
        return find(key) != null;
    }
}
