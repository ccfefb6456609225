package io.slabwise;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Commits chunks from the direct source, touches them, gives them all back,
 * and does it again: the first round's frees raise glibc's dynamic mmap
 * threshold, so chunks taken on their own in the second round come from
 * malloc's arenas. Prints the resident bytes before, at the peak of the second
 * round and after it (and after the native heap trim a pool's trim would
 * make), then committed bytes and whether regions were grouped.
 * Run in a JVM of its own by {@link RegionGroupsTest.Resident}.
 */
public final class GroupedResidentMain {

    private GroupedResidentMain() {
    }

    /** Entry point; the argument is the number of 4 MiB chunks per round. */
    public static void main(String[] args) throws Exception {
        int chunks = Integer.parseInt(args[0]);
        CommittedMemory memory = new CommittedMemory(ChunkSource.direct(), new MemoryLimit(Long.MAX_VALUE));
        long baseline = residentBytes();
        long peak = 0;
        for (int round = 0; round < 3; round++) {
            List<NativeRegion> regions = new ArrayList<>();
            for (int i = 0; i < chunks; i++) {
                NativeRegion region = memory.commit(4 * 1024 * 1024, CommittedMemory.RegionKind.CHUNK);
                for (int at = 0; at < region.size(); at += 4096) {
                    region.buffer().put(at, (byte) 1);
                }
                regions.add(region);
                if (i == chunks / 2 && round == 0) {
                    memory.decommit(regions.remove(0)); // one early free, as an idle chunk given back would be
                }
            }
            peak = Math.max(peak, residentBytes());
            for (int i = regions.size() - 1; i >= 0; i--) {
                memory.decommit(regions.get(i));
            }
        }
        if (memory.takeFreedToMalloc()) {
            NativeHeap.trim(); // as a pool's trim, decay or close does once such regions went back to malloc
        }
        long after = residentBytes();
        System.out.println(baseline + " " + peak + " " + after + " " + memory.committed() + " " + memory.grouped());
    }

    private static long residentBytes() throws java.io.IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }
}
