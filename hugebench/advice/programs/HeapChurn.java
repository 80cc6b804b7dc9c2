// The JVM pack's program (hugebench advice jvm): a large heap allocated and collected for a fixed time.
// A live set of `live_mib` MiB of small object graphs is built, then replaced at random, one graph at a time,
// for `seconds` seconds, so that the collector copies and frees a heap-sized working set over and over
// while the program reads it (a lookup per replacement): a TLB-heavy, GC-heavy service in miniature.
// Prints one line: ops_per_s=<replacements per second> gc_ms=<time in collections> gc_count=<collections>.
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.SplittableRandom;

public final class HeapChurn {
    static final class Node {
        final byte[] payload;
        Node next;
        long key;

        Node(int size, long key) {
            this.payload = new byte[size];
            this.key = key;
        }
    }

    static Node graph(SplittableRandom random, long key) {
        Node head = new Node(16 + random.nextInt(240), key);
        Node tail = head;
        for (int i = 0; i < 7; i++) {
            tail.next = new Node(16 + random.nextInt(240), key + i);
            tail = tail.next;
        }
        return head;
    }

    static long gcMillis() {
        long total = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, bean.getCollectionTime());
        }
        return total;
    }

    static long gcCount() {
        long total = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, bean.getCollectionCount());
        }
        return total;
    }

    public static void main(String[] args) {
        long liveMib = Long.parseLong(args[0]);
        double seconds = Double.parseDouble(args[1]);
        int slots = (int) Math.max(1, liveMib * 1024 * 1024 / (8 * 200));
        SplittableRandom random = new SplittableRandom(42);
        Node[] live = new Node[slots];
        for (int i = 0; i < slots; i++) {
            live[i] = graph(random, i);
        }
        long gcBefore = gcMillis();
        long countBefore = gcCount();
        long checksum = 0;
        long ops = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        while (true) {
            for (int i = 0; i < 1024; i++) {
                int at = random.nextInt(slots);
                Node look = live[random.nextInt(slots)];
                checksum += look.key + look.payload.length;
                live[at] = graph(random, ops + i);
            }
            ops += 1024;
            if (System.nanoTime() >= end) {
                break;
            }
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        System.out.printf(
                "ops_per_s=%.1f gc_ms=%d gc_count=%d checksum=%d%n",
                ops / elapsed, gcMillis() - gcBefore, gcCount() - countBefore, checksum);
    }
}
