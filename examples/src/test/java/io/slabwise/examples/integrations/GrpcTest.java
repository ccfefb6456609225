package io.slabwise.examples.integrations;

import io.slabwise.netty.SlabwiseAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * gRPC over grpc-netty on one {@link SlabwiseAllocator} (a category for the
 * server, one for the channel): 64 MiB each way in messages of 1 B to 5 MiB,
 * half in unary calls and half in bidirectional streams, eight HTTP/2 streams
 * at once, echoed. Besides what {@link FrameworkTrafficTest} checks, gRPC's
 * own pooled allocators (made by {@code io.grpc.netty.Utils} for channels
 * given none) serve nothing.
 */
@Timeout(180)
class GrpcTest extends FrameworkTrafficTest {

    @Test
    void unaryAndStreamingCallsEchoedThroughSlabwiseAndEverythingGivenBack() throws Exception {
        BodyPlan plan = BodyPlan.standard(11);
        Exchange exchange = GrpcExample.run(SlabwiseAllocator.builder().build(), plan);
        assertServedIntactAndReturned(exchange, plan);
    }
}
