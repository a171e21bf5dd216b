package org.lodtensor;

import com.sun.jna.Pointer;
import java.lang.ref.Cleaner;
import java.util.function.Consumer;

/**
 * One C handle and how to destroy it. Registered with a Cleaner as the safety net for owners that
 * are never closed; it must not refer to its owner (or the owner would never become unreachable).
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
}
