package org.lodtensor;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/** The dynamic-RNN driver (tensor_array_dynamic_rnn) with a step function written in Java. */
public final class DynamicRnn {
    private DynamicRnn() {}

    /** What a step returns: its output and the new state (null: the output is also the state). */
    public record StepResult(Tensor output, Tensor newState) {
        public StepResult(Tensor output) {
            this(output, null);
        }
    }

    /**
     * One step of the RNN. {@code input} (one unit per live sequence, in rank order) and
     * {@code prevState} are lent for the call only: closing them does nothing, and they are
     * emptied when the call returns (share them to keep them). The returned tensors are handed to
     * the library and emptied. Anything thrown stops the RNN; {@link #run} then throws a
     * {@link LodTensorException} with status CALLBACK_FAILED whose cause is what was thrown.
     */
    @FunctionalInterface
    public interface StepFunction {
        StepResult step(long step, Tensor input, Tensor prevState) throws Exception;
    }

    /**
     * Runs a whole dynamic RNN over the sequences of LoD level {@code level} of x from
     * {@code initState} (one unit per sequence, original order) and returns the packed step
     * outputs in the original order. The step function runs on the calling thread.
     */
    public static Tensor run(Tensor x, int level, Tensor initState, StepFunction fn) {
        Throwable[] thrown = new Throwable[1];
        LodTensorLib.StepFn callback = (step, input, prev, output, newState, userData) -> {
            Tensor in = Tensor.borrow(input);
            Tensor pv = Tensor.borrow(prev);
            try {
                StepResult r = fn.step(step, in, pv);
                if (r == null || r.output() == null) {
                    throw new NullPointerException("the step function returned no output");
                }
                Pointer o = r.output().take();
                output.setPointer(0, o);
                Tensor ns = r.newState();
                newState.setPointer(0, ns == null || ns == r.output() ? o : ns.take());
                return 0;
            } catch (Throwable t) {
                // Nothing may propagate into the library's frames (JNA would swallow it).
                thrown[0] = t;
                return -1;
            } finally {
                in.forget();
                pv.forget();
            }
        };
        PointerByReference out = new PointerByReference();
        int status = NativeHandle.call(() -> LodTensorLib.INSTANCE.tensor_array_dynamic_rnn(x.ptr(), level,
                initState.ptr(), callback, null, out), x, initState, callback);
        if (status != 0) {
            String message = LodTensorLib.INSTANCE.lodtensor_last_error_message();
            if (thrown[0] instanceof Error e) {
                throw e;
            }
            throw new LodTensorException(Status.of(status), message, thrown[0]);
        }
        return Tensor.adopt(out.getValue());
    }
}
