package io.slabwise;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engine stays behind the API: the module exports only the API packages,
 * the public types of {@code io.slabwise} are exactly the API, and no public
 * method of them takes or returns an engine type or is public only because it
 * implements an engine interface.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ApiBoundaryTest {

    /** The public types of io.slabwise; adding one is a decision, made here. */
    private static final Set<String> API = Set.of("Allocation", "Allocator", "BlockPool", "BlockStats", "Category",
            "CategoryStats", "ChunkSource", "CompactionStats", "Evacuation", "Relocator",
            "LimitPolicy", "LimitStats", "MemoryLimitException", "MemoryPool",
            "NativeRegion", "PoolConfig", "PoolStats", "PressureConfig", "PressureStats", "Scheduler", "SequentialAllocator",
            "SequentialStats", "Shrinker", "Ticker");

    @Test
    void theModuleExportsOnlyTheApiAndGivesTheInternalsToTheAdapterAlone() throws IOException {
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(classes().resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        assertEquals("io.slabwise", module.name());
        Set<String> open = module.exports().stream().filter(e -> !e.isQualified())
                .map(ModuleDescriptor.Exports::source).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(new TreeSet<>(Set.of("io.slabwise", "io.slabwise.metrics")), open);
        Set<String> qualified = module.exports().stream().filter(ModuleDescriptor.Exports::isQualified)
                .map(e -> e.source() + " to " + e.targets()).collect(Collectors.toSet());
        assertEquals(Set.of("io.slabwise.internal to [io.slabwise.netty]"), qualified);
        assertTrue(module.opens().isEmpty(), "nothing is open to reflection");
    }

    @Test
    void thePublicTypesOfTheApiPackageAreExactlyTheApi() throws Exception {
        Set<String> publicTypes = new TreeSet<>();
        for (Class<?> type : topLevelClassesOf("io.slabwise")) {
            if (Modifier.isPublic(type.getModifiers())) {
                publicTypes.add(type.getSimpleName());
            }
        }
        assertEquals(new TreeSet<>(API), publicTypes, "engine classes stay package-private");
    }

    /**
     * A public method that takes or returns a package-private type, or that
     * is public only because its class implements a package-private interface,
     * would let a caller reach the engine.
     */
    @Test
    void noPublicMethodOfTheApiReachesAnEngineType() throws Exception {
        for (Class<?> type : topLevelClassesOf("io.slabwise")) {
            if (!Modifier.isPublic(type.getModifiers())) {
                continue;
            }
            for (Class<?> implemented : type.getInterfaces()) {
                assertTrue(Modifier.isPublic(implemented.getModifiers()),
                        type.getSimpleName() + " implements the engine interface " + implemented.getSimpleName());
            }
            for (Method method : type.getDeclaredMethods()) {
                if (!Modifier.isPublic(method.getModifiers())) {
                    continue;
                }
                assertTrue(isApi(method.getReturnType()), method + " returns an engine type");
                for (Class<?> parameter : method.getParameterTypes()) {
                    assertTrue(isApi(parameter), method + " takes an engine type");
                }
            }
        }
    }

    private static boolean isApi(Class<?> type) {
        Class<?> t = type.isArray() ? type.getComponentType() : type;
        while (t.getEnclosingClass() != null) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
            t = t.getEnclosingClass();
        }
        return t.isPrimitive() || !t.getPackageName().equals("io.slabwise") || API.contains(t.getSimpleName());
    }

    private static Path classes() {
        Path jarOrDir = Path.of(MemoryPool.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        return Files.isDirectory(jarOrDir) ? jarOrDir : Path.of("target", "classes");
    }

    private static Set<Class<?>> topLevelClassesOf(String packageName) throws Exception {
        Path dir = classes().resolve(packageName.replace('.', '/'));
        Set<Class<?>> types = new java.util.HashSet<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String name = file.getFileName().toString();
                if (name.endsWith(".class") && !name.contains("$") && !name.equals("package-info.class")) {
                    types.add(Class.forName(packageName + '.' + name.substring(0, name.length() - ".class".length())));
                }
            }
        }
        return types;
    }
}
