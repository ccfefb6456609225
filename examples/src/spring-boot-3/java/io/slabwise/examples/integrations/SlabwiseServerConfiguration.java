package io.slabwise.examples.integrations;

import io.netty.channel.ChannelOption;
import org.springframework.boot.web.embedded.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Gives Slabwise to the Reactor Netty server that Spring Boot 3 builds for
 * WebFlux, through a {@code NettyServerCustomizer} bean: Spring Boot applies
 * every such bean to the {@code HttpServer} it has configured, just before
 * binding it. (Spring Boot 3 has the interface in
 * {@code org.springframework.boot.web.embedded.netty}; the other major version's copy of this class,
 * in the examples' {@code src/spring-boot-4} folder, differs only in that import.)
 */
@Configuration(proxyBeanMethods = false)
public class SlabwiseServerConfiguration {

    /**
     * The customizer: the allocator on the listening channel, on each
     * accepted connection and, with HTTP/2, on each stream's channel (which
     * starts on Netty's default allocator; Reactor Netty calls
     * {@code doOnConnection} for each stream too).
     */
    @Bean
    NettyServerCustomizer slabwiseAllocator(WebFluxServerSide side) {
        return server -> side.configure(server
                .option(ChannelOption.ALLOCATOR, side.allocator())                  // the listening channel
                .childOption(ChannelOption.ALLOCATOR, side.allocator())             // each accepted connection
                .doOnConnection(connection -> side.adopt(connection.channel())));   // each HTTP/2 stream
    }
}
