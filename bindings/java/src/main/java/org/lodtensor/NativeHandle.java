package org.lodtensor;

import com.sun.jna.Pointer;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One C handle and how to destroy it. Registered with a Cleaner as the safety net for owners that
 * are never closed; it must not refer to its owner (or the owner would never become unreachable).
 * Also what every call on handles goes through: the status check, the owners kept reachable for
 * the call ({@link #call}), and the sizes that must fit Java's arrays and buffers.
 */
final class NativeHandle implements Runnable {
    static final Cleaner CLEANER = Cleaner.create();

    private volatile Pointer ptr;
    private final Consumer<Pointer> destroy; // null for a borrowed handle

    NativeHandle(Pointer ptr, Consumer<Pointer> destroy) {
        this.ptr = ptr;
        this.destroy = destroy;
    }

    /** The handle; null once closed (the library then answers NULL_ARGUMENT). */
    Pointer get() {
        return ptr;
    }

    /** Gives the handle away (to the library) without destroying it. */
    synchronized Pointer take() {
        Pointer p = ptr;
        if (destroy != null) {
            ptr = null;
        }
        return p;
    }

    /** Forgets the handle without destroying it (a borrowed handle whose loan ended). */
    synchronized void forget() {
        ptr = null;
    }

    @Override
    public synchronized void run() {
        Pointer p = ptr;
        ptr = null;
        if (p != null && destroy != null) {
            destroy.accept(p);
        }
    }

    static void check(int status) {
        if (status != 0) {
            throw new LodTensorException(Status.of(status), LodTensorLib.INSTANCE.lodtensor_last_error_message());
        }
    }

    /** A call into the library, answering its status. */
    @FunctionalInterface
    interface Call {
        int run();
    }

    /**
     * Runs {@code call}, which uses the handles of {@code owners} (tensors, arrays, tables,
     * decoders, callbacks), and answers its status. Every native call on a handle goes through
     * here (or {@link #keep}): a handle read from its owner is a bare address, so once compiled
     * code no longer needs the owner it may be collected mid-call and its Cleaner destroy the
     * handle under the library. The owners stay reachable until the call has returned.
     */
    static int call(Call call, Object... owners) {
        try {
            return call.run();
        } finally {
            Reference.reachabilityFence(owners);
        }
    }

    /** {@link #call}, then {@link #check(int)} of its status. */
    static void check(Call call, Object... owners) {
        check(call(call, owners));
    }

    /**
     * {@link #call} for work that answers a value, such as a copy out of a handle's memory, which
     * needs the owners just as long.
     */
    static <T> T keep(Supplier<T> work, Object... owners) {
        try {
            return work.get();
        } finally {
            Reference.reachabilityFence(owners);
        }
    }

    /** The longest Java array the binding makes (VMs refuse the last few int lengths). */
    static final int MAX_ARRAY_LENGTH = Integer.MAX_VALUE - 8;

    /**
     * {@code n} elements as the length of a Java array for {@code what}: UNSUPPORTED over
     * {@link #MAX_ARRAY_LENGTH}, rather than a copy cut to a wrapped-around int.
     */
    static int arrayLength(long n, String what) {
        if (n < 0 || n > MAX_ARRAY_LENGTH) {
            throw new LodTensorException(Status.UNSUPPORTED, what + ": " + Long.toUnsignedString(n)
                    + " elements do not fit a Java array (at most " + MAX_ARRAY_LENGTH + ")");
        }
        return (int) n;
    }

    /**
     * A count the library gave for {@code what} (a number of elements, of levels) as a Java int:
     * UNSUPPORTED over Integer.MAX_VALUE, rather than a wrapped-around, perhaps negative, value.
     */
    static int intCount(long n, String what) {
        if (n < 0 || n > Integer.MAX_VALUE) {
            throw new LodTensorException(Status.UNSUPPORTED, what + ": " + Long.toUnsignedString(n)
                    + " does not fit a Java int (at most " + Integer.MAX_VALUE + ")");
        }
        return (int) n;
    }

    /**
     * {@code n} elements of {@code size} bytes as the capacity in bytes of a ByteBuffer for
     * {@code what}: UNSUPPORTED over Integer.MAX_VALUE bytes, rather than a buffer over the first
     * bytes only.
     */
    static int bufferCapacity(long n, int size, String what) {
        if (n < 0 || n > Integer.MAX_VALUE / size) {
            throw new LodTensorException(Status.UNSUPPORTED, what + ": " + Long.toUnsignedString(n)
                    + (size == 1 ? "" : " x " + size) + " bytes do not fit a ByteBuffer (at most "
                    + Integer.MAX_VALUE + ")");
        }
        return (int) n * size;
    }
}
